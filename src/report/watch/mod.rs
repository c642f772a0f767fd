//! What `lowlat watch` prints: the Prometheus exposition ([`exposition`]), and for people and
//! scripts the screen and the JSON lines ([`view`]).

pub(crate) mod exposition;
pub(crate) mod view;
