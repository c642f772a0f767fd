//! `lowlat man --out DIR`: the manual pages (lowlat(1) and one page per subcommand, e.g.
//! lowlat-measure-jitter(1)), rendered from the same clap definitions that parse the command
//! line.

use anyhow::Result;
use clap::{Args, CommandFactory};
use std::path::PathBuf;

use super::output::print;
use super::{Cli, exit};
use crate::plan::artifacts::Artifact;

/// Options of `lowlat man`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lowlat man --out /usr/share/man/man1 --force\n  \
lowlat man --out /tmp/man && man -l /tmp/man/lowlat-audit.1"
)]
pub struct ManArgs {
    /// Write the pages (lowlat.1, lowlat-SUBCOMMAND.1, ...) into DIR, created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Write into a directory that is not empty, replacing pages of the same name.
    #[arg(long)]
    pub force: bool,
}

/// Runs `lowlat man`: writes every page and lists the files written.
pub(crate) fn run(args: &ManArgs) -> Result<u8> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    let mut pages = Vec::new();
    render_pages(&command, &mut pages)?;
    let written = super::plan::write_artifacts(&args.out, &pages, args.force)?;
    let mut listing = String::new();
    for path in written {
        listing.push_str(&format!("{}\n", path.display()));
    }
    print(&listing)?;
    Ok(exit::OK)
}

/// Appends the page of `command` and of each of its subcommands, depth first, to `pages`.
fn render_pages(command: &clap::Command, pages: &mut Vec<Artifact<'static>>) -> Result<()> {
    let page = command.clone().override_usage(synopsis(command));
    let man = clap_mangen::Man::new(page).source(concat!("lowlat ", env!("CARGO_PKG_VERSION")));
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    pages.push(Artifact::text(
        man.get_filename(),
        None,
        String::from_utf8(roff)?,
    ));
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        render_pages(sub, pages)?;
    }
    Ok(())
}

/// The SYNOPSIS of `command` with the value each option takes (`[--profile NAME]`,
/// `[--isolate CPULIST]`): clap_mangen's own lists the options without their values.
fn synopsis(command: &clap::Command) -> String {
    let mut line = command
        .get_bin_name()
        .unwrap_or(command.get_name())
        .to_string();
    for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = arg.get_value_names().map_or_else(
            || arg.get_id().as_str().to_uppercase(),
            |names| names.join(" "),
        );
        let mut text = match (arg.get_short(), arg.get_long()) {
            _ if arg.is_positional() => value,
            (short, Some(long)) => {
                let flag = short.map_or(format!("--{long}"), |s| format!("-{s}|--{long}"));
                if arg.get_action().takes_values() {
                    format!("{flag} {value}")
                } else {
                    flag
                }
            }
            (Some(short), None) => format!("-{short}"),
            (None, None) => continue,
        };
        if matches!(arg.get_action(), clap::ArgAction::Append) {
            text.push_str("...");
        }
        line.push(' ');
        if arg.is_required_set() {
            line.push_str(&text);
        } else {
            line.push_str(&format!("[{text}]"));
        }
    }
    if command.get_subcommands().any(|s| !s.is_hide_set()) {
        let name = command.get_subcommand_value_name().unwrap_or("COMMAND");
        line.push_str(&format!(" <{name}>"));
    }
    line
}
