//! The kernel-argument model: the arguments a `cmdline:<key>` setting wants and the keys it
//! owns (its own key and every key in its value), compared the way the kernel does (`-` and
//! `_` alike). The plan renders them and apply installs and verifies them.

use std::collections::BTreeSet;

use crate::machine::kernel::cmdline::{Param, parse_cmdline};
use crate::tuning::setting::Setting;
use crate::tuning::setting_id::SettingId;

/// Why a boot setting's arguments cannot be written safely into a boot configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KernelArgError {
    /// The id's key has characters outside `[A-Za-z0-9_.-]`.
    #[error("'{0}' is not a kernel argument key")]
    Key(String),
    /// An argument has quotes or shell characters.
    #[error("'{0}': lowlat does not write arguments with quotes or shell characters")]
    ShellCharacters(String),
    /// An argument's key has characters outside `[A-Za-z0-9_.-]`.
    #[error("'{0}' is not a kernel argument")]
    Argument(String),
}

/// A key as the kernel compares it (`-` and `_` are the same).
pub(crate) fn normal_key(key: &str) -> String {
    key.replace('-', "_")
}

/// A parameter written back as one token (`key=value` or `key`).
fn token(param: &Param) -> String {
    match &param.value {
        Some(value) => format!("{}={value}", param.key),
        None => param.key.clone(),
    }
}

/// A token in the form compared: key normalised, value as written.
fn normal_token(param: &Param) -> String {
    match &param.value {
        Some(value) => format!("{}={value}", normal_key(&param.key)),
        None => normal_key(&param.key),
    }
}

/// The arguments one boot setting wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Args {
    /// The setting id.
    pub id: SettingId,
    /// The keys it owns, normalised.
    pub keys: BTreeSet<String>,
    /// The arguments, as written.
    pub tokens: Vec<String>,
}

impl Args {
    /// Reads a boot setting; the problem when its arguments cannot be written safely into a
    /// boot configuration (quotes, shell characters, keys outside `[A-Za-z0-9_.-]`).
    pub(crate) fn of(setting: &Setting) -> Result<Args, KernelArgError> {
        let key = match setting.id.cmdline_key() {
            Some(key) => key.to_string(),
            None => setting.id.to_string(),
        };
        let key = key.as_str();
        let key_ok = |k: &str| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        };
        if !key_ok(key) {
            return Err(KernelArgError::Key(key.to_string()));
        }
        let mut keys = BTreeSet::from([normal_key(key)]);
        let mut tokens = Vec::new();
        for t in setting.value.split_whitespace() {
            if t.contains(['"', '\'', '$', '`', '\\']) {
                return Err(KernelArgError::ShellCharacters(t.to_string()));
            }
            let k = t.split_once('=').map_or(t, |(k, _)| k);
            if !key_ok(k) {
                return Err(KernelArgError::Argument(t.to_string()));
            }
            keys.insert(normal_key(k));
            tokens.push(t.to_string());
        }
        Ok(Args {
            id: setting.id.clone(),
            keys,
            tokens,
        })
    }

    /// Whether an argument string has exactly these arguments for the owned keys (in any
    /// order).
    pub(crate) fn satisfied_by(&self, args: &str) -> bool {
        satisfied_by(&self.keys, &self.tokens, args)
    }
}

/// Whether `args` has exactly the arguments `tokens` for the keys `keys` (in any order).
fn satisfied_by(keys: &BTreeSet<String>, tokens: &[String], args: &str) -> bool {
    let mut have: Vec<String> = owned_params(args, keys).iter().map(normal_token).collect();
    let mut want: Vec<String> = tokens
        .iter()
        .flat_map(|t| parse_cmdline(t).params)
        .map(|p| normal_token(&p))
        .collect();
    have.sort();
    want.sort();
    have == want
}

/// The parameters of `args` whose key is in `keys`.
fn owned_params(args: &str, keys: &BTreeSet<String>) -> Vec<Param> {
    parse_cmdline(args)
        .params
        .into_iter()
        .filter(|p| keys.contains(&normal_key(&p.key)))
        .collect()
}

/// The arguments of every boot setting together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct AllArgs {
    /// Every key owned, normalised.
    pub keys: BTreeSet<String>,
    /// Every argument wanted, in plan order.
    pub tokens: Vec<String>,
}

impl AllArgs {
    /// Joins the settings' arguments.
    pub(crate) fn of(args: &[Args]) -> AllArgs {
        AllArgs {
            keys: args.iter().flat_map(|a| a.keys.iter().cloned()).collect(),
            tokens: args.iter().flat_map(|a| a.tokens.iter().cloned()).collect(),
        }
    }

    /// Whether an argument string has exactly the wanted arguments for the owned keys.
    pub(crate) fn satisfied_by(&self, args: &str) -> bool {
        satisfied_by(&self.keys, &self.tokens, args)
    }

    /// The arguments of `args` with an owned key, as tokens (what must be removed).
    pub(crate) fn owned_tokens(&self, args: &str) -> Vec<String> {
        owned_params(args, &self.keys).iter().map(token).collect()
    }
}
