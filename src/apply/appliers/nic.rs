//! NIC knobs (`nic:<interface>:<knob>`): coalescing, rings, channels and offloads through
//! ethtool's netlink SET requests, NAPI's per-device files in sysfs. Each is read, journaled
//! (the value as ethtool showed it), set through the same interface it is read by, and read
//! back: a driver that rounds (rx-usecs 7 kept as 8) or keeps a feature it cannot change is a
//! refusal that names the value it kept, and apply goes on. So is an interface that is gone.

use super::Expansion;
use crate::apply::change::{ApplyContext, Change, ChangeError, Inspection};
use crate::apply::journal::Record;
use crate::machine::nic::identity::{self, NicIdentity};
use crate::machine::nic::knob::{self, Knob, KnobError};
use crate::sysroot::SysRoot;
use crate::tuning::setting_id::SettingId;

/// Errnos a driver answers for a value or knob it does not take: refusals, and apply goes on.
const REFUSED: &[i32] = &[
    libc::EINVAL,
    libc::EOPNOTSUPP,
    libc::EBUSY,
    libc::EPERM,
    libc::ERANGE,
    libc::EIO,
];

/// A knob error as apply reports it: a gone interface, a knob the driver lacks and the
/// driver's refusals are refusals; anything else (an unreadable tree) stops the work.
fn change_error(e: KnobError) -> ChangeError {
    let refused = match &e {
        KnobError::Gone { .. } | KnobError::NotReported { .. } => true,
        _ => e.errno().is_some_and(|errno| REFUSED.contains(&errno)),
    };
    if refused || matches!(e, KnobError::Refused { .. }) {
        ChangeError::Refused(e.to_string())
    } else {
        ChangeError::Failed(e.to_string())
    }
}

/// Setting one knob of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NicChange {
    /// The interface.
    pub interface: String,
    /// The knob.
    pub knob: Knob,
    /// The value to set (1/0 for a switch).
    pub want: u64,
}

impl NicChange {
    fn id(&self) -> SettingId {
        SettingId::Nic {
            interface: self.interface.clone(),
            knob: self.knob,
        }
    }
}

/// Sets `knob` of `interface` to `want` and reads it back: `Err` names the value the driver
/// kept when it is not `want`.
fn set_and_check(
    root: &SysRoot,
    interface: &str,
    knob: Knob,
    want: u64,
) -> Result<(), ChangeError> {
    knob::set(root, interface, knob, want).map_err(change_error)?;
    let kept = knob::read(root, interface, knob).map_err(change_error)?;
    if kept == want {
        Ok(())
    } else {
        Err(ChangeError::Refused(format!(
            "{interface} {knob}: set {}, the driver kept {}",
            knob.show(want),
            knob.show(kept)
        )))
    }
}

impl Change for NicChange {
    fn target(&self) -> String {
        self.knob.target(&self.interface)
    }

    fn desired(&self) -> String {
        self.knob.show(self.want)
    }

    fn inspect(&self, ctx: &ApplyContext) -> Result<Inspection, ChangeError> {
        let now = knob::read(ctx.root, &self.interface, self.knob).map_err(change_error)?;
        let current = self.knob.show(now);
        Ok(Inspection {
            in_place: now == self.want,
            prior: vec![Record::Nic {
                setting: self.id(),
                prior: current.clone(),
                device: identity::identity(ctx.root, &self.interface),
            }],
            current,
        })
    }

    fn apply(&self, ctx: &ApplyContext) -> Result<(), ChangeError> {
        set_and_check(ctx.root, &self.interface, self.knob, self.want)
    }
}

/// The change of a `nic:` setting; `None` for other targets.
pub(crate) fn expand(target: &SettingId, value: &str) -> Option<Expansion> {
    let SettingId::Nic { interface, knob } = target else {
        return None;
    };
    Some(match knob.parse_value(value) {
        Ok(want) => Expansion::Changes(vec![Box::new(NicChange {
            interface: interface.clone(),
            knob: *knob,
            want,
        })]),
        Err(e) => Expansion::Invalid(e.to_string()),
    })
}

/// Puts a knob back to the value a journal record holds, through the same interface apply
/// set it by, on the device the record names (found again under its name now: a renamed
/// device is restored, one that took its name is not); `Ok(true)` when something changed.
/// A device that is not there is refused (revert keeps the record: the device may come back).
pub(crate) fn restore(
    root: &SysRoot,
    setting: &SettingId,
    prior: &str,
    device: &NicIdentity,
) -> Result<bool, ChangeError> {
    let SettingId::Nic { interface, knob } = setting else {
        return Err(ChangeError::Failed(format!(
            "{setting}: a NIC record whose id is not a NIC knob"
        )));
    };
    let want = knob
        .parse_value(prior)
        .map_err(|e| ChangeError::Failed(format!("{setting}: the journal's value: {e}")))?;
    let interface = if device.is_empty() {
        interface.clone()
    } else {
        identity::find(root, interface, device).ok_or_else(|| {
            ChangeError::Refused(format!(
                "{interface} ({device}) is gone: no network interface is that device now; \
                 the record stays in the journal for a revert when it is back"
            ))
        })?
    };
    let now = knob::read(root, &interface, *knob).map_err(change_error)?;
    if now == want {
        return Ok(false);
    }
    set_and_check(root, &interface, *knob, want)?;
    Ok(true)
}
