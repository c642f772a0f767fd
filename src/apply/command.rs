//! The system commands apply and revert run on the live machine (systemctl, grubby, the GRUB
//! configuration generator), behind a trait so that tests can script them. They are never run
//! for a directory tree (`--root`): there, what they would do is reported instead.

use std::io;
use std::path::{Path, PathBuf};

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    /// The exit status, `None` when killed by a signal.
    pub status: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl Output {
    /// Whether it exited with status 0.
    pub(crate) fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// The last non-empty line of standard error, or of standard output, for messages.
    pub(crate) fn message(&self) -> String {
        let last = |text: &str| {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string())
        };
        last(&self.stderr)
            .or_else(|| last(&self.stdout))
            .unwrap_or_else(|| match self.status {
                Some(code) => format!("exit status {code}"),
                None => "killed by a signal".to_string(),
            })
    }
}

/// Runs system programs.
pub(crate) trait Runner {
    /// The full path of `program` when it is installed.
    fn find(&self, program: &str) -> Option<PathBuf>;
    /// Runs `program` with `args` and waits for it.
    fn run(&self, program: &Path, args: &[String]) -> io::Result<Output>;
}

/// The directories searched for programs besides `$PATH` (sudo and systemd units may have a
/// short one).
const SYSTEM_DIRS: &[&str] = &["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// Runs programs of the live machine with `std::process::Command`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemRunner;

impl Runner for SystemRunner {
    fn find(&self, program: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
            .map(|dir| dir.join(program))
            .find(|candidate| {
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }

    fn run(&self, program: &Path, args: &[String]) -> io::Result<Output> {
        let out = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()?;
        Ok(Output {
            status: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// A command line for messages: `systemctl try-restart irqbalance.service`.
pub(crate) fn shown(program: &str, args: &[String]) -> String {
    let mut out = program.to_string();
    for arg in args {
        out.push(' ');
        if arg.is_empty() || arg.contains(char::is_whitespace) {
            out.push_str(&format!("'{arg}'"));
        } else {
            out.push_str(arg);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod fake {
    //! A scripted runner for tests: answers from a closure and records every call.
    use super::*;
    use std::cell::RefCell;

    /// Answers calls with `answer(program, args)`.
    pub(crate) struct FakeRunner<F: Fn(&str, &[String]) -> Output> {
        /// The programs it pretends are installed.
        pub installed: Vec<&'static str>,
        /// The answer to each call.
        pub answer: F,
        /// Every call made, as shown by [`shown`].
        pub calls: RefCell<Vec<String>>,
    }

    impl<F: Fn(&str, &[String]) -> Output> Runner for FakeRunner<F> {
        fn find(&self, program: &str) -> Option<PathBuf> {
            self.installed
                .contains(&program)
                .then(|| PathBuf::from(program))
        }

        fn run(&self, program: &Path, args: &[String]) -> io::Result<Output> {
            let name = program.to_string_lossy().into_owned();
            self.calls.borrow_mut().push(shown(&name, args));
            Ok((self.answer)(&name, args))
        }
    }

    /// A successful run printing `stdout`.
    pub(crate) fn ok(stdout: &str) -> Output {
        Output {
            status: Some(0),
            stdout: stdout.to_string(),
            stderr: String::new(),
        }
    }

    /// A run ending with `status`, printing `stdout`.
    pub(crate) fn status(status: i32, stdout: &str) -> Output {
        Output {
            status: Some(status),
            stdout: stdout.to_string(),
            stderr: String::new(),
        }
    }
}
