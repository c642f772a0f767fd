//! Requests that change the machine through a socket rather than a file (ethtool's netlink
//! SET requests): the write beside [`SysRoot::answer`], confined to the root as every other
//! write is.

use std::io;

use super::{SysRoot, WriteError};

/// What a request does to a root that is not the live machine: the captured answer as the
/// request leaves it and the kernel's answer to the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emulated {
    /// The new content of the captured answer the request changes; `None` when the request
    /// changes nothing (the kernel refused it, or took it and kept its value).
    pub answer: Option<Vec<u8>>,
    /// The bytes the kernel would have answered the request with (an acknowledgement or an
    /// error message).
    pub reply: Vec<u8>,
}

impl SysRoot {
    /// Puts a request that changes the machine and returns the kernel's answer, as its bytes.
    ///
    /// On the live machine `send` puts it (nothing is recorded: a snapshot holds reads).
    /// Under any other root nothing leaves the root: `emulate` is given the captured answer
    /// at `path` (the file [`SysRoot::answer`] reads there) and says what the request makes
    /// of it; the new answer is written in place, so that the next read shows the change as
    /// the live machine would. A captured answer that is absent is a device that is gone
    /// (`ENODEV`, as the kernel answers for an interface it does not have).
    pub fn tell(
        &self,
        path: &str,
        send: impl FnOnce() -> io::Result<Vec<u8>>,
        emulate: impl FnOnce(&[u8]) -> Emulated,
    ) -> Result<Vec<u8>, WriteError> {
        if self.live {
            return send().map_err(|e| WriteError::new(path, "send the request of", e));
        }
        let now = self.read_bytes(path).map_err(|e| {
            let source = if e.is_not_found() {
                io::Error::from_raw_os_error(libc::ENODEV)
            } else {
                io::Error::other(e.to_string())
            };
            WriteError::new(path, "read the captured answer", source)
        })?;
        let emulated = emulate(&now);
        if let Some(answer) = emulated.answer {
            self.write_knob(path, &answer)?;
        }
        Ok(emulated.reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_tree::TestTree;

    #[test]
    fn a_tree_gets_the_emulated_answer_and_a_missing_one_is_a_gone_device() {
        let tree = TestTree::empty();
        tree.write("/lowlat-answers/x/eth0/coalesce", "old");
        let root = tree.root();
        let reply = root
            .tell(
                "/lowlat-answers/x/eth0/coalesce",
                || panic!("a tree never sends"),
                |old| {
                    assert_eq!(old, b"old");
                    Emulated {
                        answer: Some(b"new".to_vec()),
                        reply: b"ack".to_vec(),
                    }
                },
            )
            .unwrap();
        assert_eq!(reply, b"ack");
        assert_eq!(
            root.read_bytes("/lowlat-answers/x/eth0/coalesce").unwrap(),
            b"new"
        );
        let gone = root
            .tell(
                "/lowlat-answers/x/eth9/coalesce",
                || panic!("a tree never sends"),
                |_| panic!("nothing to emulate"),
            )
            .unwrap_err();
        assert_eq!(gone.errno(), Some(libc::ENODEV));
    }
}
