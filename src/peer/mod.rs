//! The peers' formats: what sysjitter, oslat and cyclictest print, the HDR histogram buckets,
//! and the parsers that replay the peers' recorded outputs through lowlat's statistics.

pub mod cyclictest;
pub(crate) mod hdr;
pub(crate) mod oslat;
pub mod sysjitter;
