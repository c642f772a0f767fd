//! The `lowlat` binary: parse, run, map errors to the documented exit codes.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = lowlat::cli::Cli::parse();
    match lowlat::cli::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("lowlat: error: {}", describe(&err));
            ExitCode::from(lowlat::cli::exit::ERROR)
        }
    }
}

/// The error and its causes joined by `: `, leaving out a cause whose text the message already
/// holds (a library error that names its OS error would otherwise print it twice).
fn describe(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
