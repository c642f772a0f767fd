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
            eprintln!("lowlat: error: {}", lowlat::cli::error_text(err.as_ref()));
            ExitCode::from(lowlat::cli::exit::ERROR)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
