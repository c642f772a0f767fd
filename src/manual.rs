//! The manual pages (lowlat(1) and one page per subcommand, e.g. lowlat-measure-jitter(1)),
//! rendered from the clap definitions that parse the command line: `cli` builds the command and
//! `lowlat man` writes what [`pages`] returns. The only module besides `cli` that sees clap, and
//! only as the command to describe.

use crate::plan::artifacts::Artifact;
use roff::{Roff, bold, roman};

/// How the command line is laid out, beside its clap definition.
pub(crate) struct Layout<'a> {
    /// The help heading of the input options (`--root`, `--snapshot`, ...).
    pub input_options: &'a str,
    /// The subcommands that refuse the input options: their pages leave them out.
    pub refuse_input: &'a [&'a str],
}

/// Why a page could not be rendered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManualError {
    /// clap_mangen could not write a section.
    #[error("rendering a manual page: {0}")]
    Render(#[from] std::io::Error),
    /// A page was not UTF-8 text.
    #[error("a manual page is not UTF-8: {0}")]
    Utf8(#[from] std::string::FromUtf8Error),
}

/// The page of `command` (built) and of each of its subcommands, depth first.
pub(crate) fn pages(
    command: &clap::Command,
    layout: &Layout<'_>,
) -> Result<Vec<Artifact<'static>>, ManualError> {
    let mut pages = Vec::new();
    render_pages(command, layout, &ManPage::top(command), &mut pages)?;
    Ok(pages)
}

/// What a page inherits from the pages above it.
struct ManPage {
    /// The page of the command above (`lowlat` for `lowlat-audit`), none for lowlat(1).
    parent: Option<String>,
    /// The command refuses the input options (`--root`, `--snapshot`, ...): its page leaves
    /// them out.
    refuses_input: bool,
    /// The exit codes of the nearest command above that documents its own.
    exit_status: Option<String>,
}

impl ManPage {
    fn top(command: &clap::Command) -> Self {
        Self {
            parent: None,
            refuses_input: false,
            exit_status: HelpText::of(command).exit_status,
        }
    }
}

/// A command's `after_help`, the text `--help` ends with, split into the manual's sections.
#[derive(Debug, Default, PartialEq)]
struct HelpText {
    /// The command lines after `Examples:`, one per entry.
    examples: Vec<String>,
    /// The text from `Exit codes:` to the end of its paragraph.
    exit_status: Option<String>,
    /// Every other paragraph.
    notes: Vec<String>,
}

impl HelpText {
    fn of(command: &clap::Command) -> Self {
        let text = command
            .get_after_long_help()
            .or_else(|| command.get_after_help())
            .map(|t| t.to_string())
            .unwrap_or_default();
        Self::parse(&text)
    }

    fn parse(text: &str) -> Self {
        let mut help = Self::default();
        for paragraph in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(lines) = paragraph.strip_prefix("Examples:") {
                help.examples.extend(
                    lines
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(String::from),
                );
                continue;
            }
            let (note, codes) = match paragraph.find("Exit codes:") {
                Some(at) => (paragraph[..at].trim(), Some(&paragraph[at..])),
                None => (paragraph, None),
            };
            if !note.is_empty() {
                help.notes.push(note.replace('\n', " "));
            }
            if let Some(codes) = codes {
                let codes = codes.trim_start_matches("Exit codes:").trim();
                help.exit_status = Some(codes.replace('\n', " "));
            }
        }
        help
    }
}

/// Appends the page of `command` and of each of its subcommands, depth first, to `pages`.
fn render_pages(
    command: &clap::Command,
    layout: &Layout<'_>,
    inherited: &ManPage,
    pages: &mut Vec<Artifact<'static>>,
) -> Result<(), ManualError> {
    let mut page = command.clone();
    if inherited.refuses_input {
        page = page.mut_args(|arg| {
            if arg.get_help_heading() == Some(layout.input_options) {
                arg.hide(true)
            } else {
                arg
            }
        });
    }
    let usage = synopsis(&page);
    page = page.override_usage(usage);
    let help = HelpText::of(command);
    let exit_status = help.exit_status.clone().or(inherited.exit_status.clone());
    let man =
        clap_mangen::Man::new(page.clone()).source(concat!("lowlat ", env!("CARGO_PKG_VERSION")));
    let name = man.get_filename().trim_end_matches(".1").to_string();
    let mut roff = Vec::new();
    man.render_title(&mut roff)?;
    man.render_name_section(&mut roff)?;
    man.render_synopsis_section(&mut roff)?;
    man.render_description_section(&mut roff)?;
    if page.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut roff)?;
    }
    if page.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut roff)?;
    }
    let subpages: Vec<String> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| format!("{name}-{}", s.get_name()))
        .collect();
    let mut sections = Roff::new();
    sections_after_options(
        &mut sections,
        &name,
        &help,
        exit_status.as_deref(),
        inherited.parent.as_deref(),
        &subpages,
    );
    sections.to_writer(&mut roff)?;
    if page.get_version().is_some() {
        man.render_version_section(&mut roff)?;
    }
    pages.push(Artifact::text(
        man.get_filename(),
        None,
        String::from_utf8(roff)?,
    ));
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let below = ManPage {
            parent: Some(name.clone()),
            refuses_input: inherited.refuses_input
                || (inherited.parent.is_none() && layout.refuse_input.contains(&sub.get_name())),
            exit_status: exit_status.clone(),
        };
        render_pages(sub, layout, &below, pages)?;
    }
    Ok(())
}

/// The files lowlat keeps on the machine, and the pages (by command) that name them.
fn files() -> [(&'static str, &'static str, &'static [&'static str]); 4] {
    [
        (
            crate::apply::journal::JOURNAL_PATH,
            "the journal of every value `lowlat apply` changed, read by `lowlat revert`",
            &["lowlat", "lowlat-apply", "lowlat-revert"],
        ),
        (
            crate::apply::lock::LOCK_PATH,
            "held while `lowlat apply` or `lowlat revert` changes the machine",
            &["lowlat", "lowlat-apply", "lowlat-revert"],
        ),
        (
            crate::plan::systemd::PLAN_PATH,
            "the plan `lowlat apply` installs, read by its lowlat-runtime.service and by `lowlat verify` without --plan",
            &["lowlat", "lowlat-apply", "lowlat-verify"],
        ),
        (
            crate::plan::irqbalance::ENV_PATH,
            "the irqbalance environment `lowlat apply` installs from the plan",
            &["lowlat", "lowlat-apply"],
        ),
    ]
}

/// NOTES, EXAMPLES, EXIT STATUS, FILES and SEE ALSO of the page `name`.
fn sections_after_options(
    roff: &mut Roff,
    name: &str,
    help: &HelpText,
    exit_status: Option<&str>,
    parent: Option<&str>,
    subpages: &[String],
) {
    if !help.notes.is_empty() {
        roff.control("SH", ["NOTES"]);
        for note in &help.notes {
            roff.control("PP", []).text([roman(note.as_str())]);
        }
    }
    if !help.examples.is_empty() {
        // One command line a line, as typed: no filling, no justification.
        roff.control("SH", ["EXAMPLES"]).control("nf", []);
        for example in &help.examples {
            roff.text([roman(example.as_str())]);
        }
        roff.control("fi", []);
    }
    if let Some(codes) = exit_status {
        roff.control("SH", ["EXIT STATUS"]).text([roman(codes)]);
    }
    let files: Vec<_> = files()
        .into_iter()
        .filter(|(_, _, pages)| pages.contains(&name))
        .collect();
    if !files.is_empty() {
        roff.control("SH", ["FILES"]);
        for (path, what, _) in files {
            roff.control("TP", [])
                .text([bold(path)])
                .text([roman(what)]);
        }
    }
    // lowlat(1), the page above, and the pages below.
    let top = (parent.is_some() && parent != Some("lowlat")).then_some("lowlat");
    let see_also: Vec<String> = top
        .into_iter()
        .chain(parent)
        .map(str::to_string)
        .chain(subpages.iter().cloned())
        .map(|page| format!("{page}(1)"))
        .collect();
    if !see_also.is_empty() {
        roff.control("SH", ["SEE ALSO"])
            .text([roman(see_also.join(", "))]);
    }
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
