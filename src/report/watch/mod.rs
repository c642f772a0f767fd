//! What `lowlat watch` prints: the Prometheus exposition ([`exposition`]), and for people and
//! scripts the screen and the JSON lines ([`view`]); [`outputs`] sends each interval where it
//! is asked to go.

pub(crate) mod exposition;
pub(crate) mod outputs;
pub(crate) mod view;
