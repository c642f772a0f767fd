//! How `lowlat bios` and `lowlat audit --bmc` reach and log in to a BMC: their flags, as the
//! `bios::pipeline::Login` they ask for.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::bios::pipeline::Login;

/// How to reach and log in to the BMC.
#[derive(Debug, Args)]
pub struct BmcArgs {
    /// The BMC: https://HOST[:PORT] (http:// only for a test bench). No user or password in it.
    #[arg(long, value_name = "URL")]
    pub bmc: String,

    /// How to log in.
    #[command(flatten)]
    pub access: BmcAccess,
}

/// How to log in to a BMC and what to trust, beside its URL: `audit` takes these with an
/// optional `--bmc` (clap makes the fields of an optional flattened struct required, clap
/// #5292, so the URL stays apart).
#[derive(Debug, Args)]
pub struct BmcAccess {
    /// The BMC account (default: $LOWLAT_BMC_USER).
    #[arg(long, value_name = "NAME", requires = "bmc")]
    pub user: Option<String>,

    /// A file whose first line is the password (default: $LOWLAT_BMC_PASSWORD). The password is
    /// never taken from the command line.
    #[arg(long, value_name = "FILE", requires = "bmc")]
    pub password_file: Option<PathBuf>,

    /// Trust the BMC's certificate if a CA in this PEM file signed it. Default: the public web
    /// roots. A self-signed BMC certificate cannot be trusted this way: have it signed by a CA.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "insecure",
        requires = "bmc"
    )]
    pub ca_file: Option<PathBuf>,

    /// Do not verify the BMC's certificate at all (anyone on the path could read the password).
    #[arg(long, requires = "bmc")]
    pub insecure: bool,

    /// Seconds one request may take before the BMC counts as not answering (1 to 3600); all
    /// the requests of one command together may take four times as long.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub timeout: u64,

    /// The system to use (its Redfish Id) when the BMC has several.
    #[arg(long, value_name = "ID", requires = "bmc")]
    pub system: Option<String>,
}

impl BmcArgs {
    /// How to log in to the BMC.
    pub(super) fn login(&self) -> Login {
        self.access.login(&self.bmc)
    }
}

impl BmcAccess {
    /// How to log in to the BMC at `url`.
    pub(crate) fn login(&self, url: &str) -> Login {
        Login {
            url: url.to_string(),
            user: self.user.clone(),
            password_file: self.password_file.clone(),
            ca_file: self.ca_file.clone(),
            insecure: self.insecure,
            timeout: Duration::from_secs(self.timeout),
            system: self.system.clone(),
        }
    }
}
