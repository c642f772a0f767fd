//! `lowlat completions SHELL`: the shell completion script, generated from the same clap
//! definitions that parse the command line, so it never lags behind a new flag.

use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::output::print;
use super::{Cli, exit};

/// Options of `lowlat completions`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat completions bash > /usr/share/bash-completion/completions/lowlat\n  \
lowlat completions zsh > /usr/share/zsh/vendor-completions/_lowlat\n  \
lowlat completions fish > /usr/share/fish/vendor_completions.d/lowlat.fish\n  \
source <(lowlat completions bash)   # this shell only"
)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// The shells lowlat writes completions for (the ones the .deb and .rpm install).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CompletionShell {
    /// GNU Bash (bash-completion).
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

impl From<CompletionShell> for Shell {
    fn from(shell: CompletionShell) -> Self {
        match shell {
            CompletionShell::Bash => Shell::Bash,
            CompletionShell::Zsh => Shell::Zsh,
            CompletionShell::Fish => Shell::Fish,
        }
    }
}

/// Runs `lowlat completions`: prints the script for `args.shell` on stdout.
pub(crate) fn run(args: &CompletionsArgs) -> Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(
        Shell::from(args.shell),
        &mut Cli::command(),
        "lowlat",
        &mut script,
    );
    print(&String::from_utf8(script)?)?;
    Ok(exit::OK)
}
