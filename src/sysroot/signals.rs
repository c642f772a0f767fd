//! Handlers installed over some signals' previous dispositions, which are put back when the
//! handlers are dropped (or one by one). A signal ignored when the handlers are installed is
//! left alone: whoever started lowlat wanted it ignored.

/// Handlers installed for some signals, with the dispositions they replaced; dropping it puts
/// those back.
pub(crate) struct Handlers {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl Handlers {
    /// Installs `handler`, with `flags` (`sa_flags`) and an empty mask, for each of `signals`
    /// that is not ignored now. `handler` must be async-signal-safe.
    pub(crate) fn install(
        signals: &[libc::c_int],
        handler: extern "C" fn(libc::c_int),
        flags: libc::c_int,
    ) -> Self {
        let mut previous = Vec::new();
        for &signal in signals {
            // SAFETY: plain sigaction calls on zeroed structs; the caller's handler is
            // async-signal-safe.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = handler as *const () as libc::sighandler_t;
                new.sa_flags = flags;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(signal, &new, std::ptr::null_mut()) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        Self { previous }
    }

    /// The signals handled whose previous disposition was the default action.
    pub(crate) fn over_default(&self) -> impl Iterator<Item = libc::c_int> + '_ {
        (self.previous.iter())
            .filter(|(_, old)| old.sa_sigaction == libc::SIG_DFL)
            .map(|(signal, _)| *signal)
    }

    /// Puts back the previous disposition of `signal`; false when it is not handled here.
    pub(crate) fn restore(&self, signal: libc::c_int) -> bool {
        let Some((_, old)) = self.previous.iter().find(|(s, _)| *s == signal) else {
            return false;
        };
        // SAFETY: restores the disposition saved by install().
        unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) == 0 }
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        for (signal, _) in &self.previous {
            self.restore(*signal);
        }
    }
}
