//! The measurement engines, one module each; they run through [`super::runner`].

pub mod c2c;
pub mod freq;
pub mod jitter;
pub mod membw;
pub mod memlat;
pub mod timer;
pub mod wakeup;
