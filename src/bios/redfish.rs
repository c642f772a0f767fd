//! The HTTP side of Redfish: one BMC, reached over HTTPS (or HTTP on a test bench) with HTTP
//! basic authentication, JSON in and out. The password lives only in the `Authorization`
//! header of each request: it is in no error, no `Debug` output and no document.

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use crate::text::{self, escape_controls};

/// The user name and password of a BMC account. `Debug` shows the user only.
#[derive(Clone)]
pub(crate) struct Credentials {
    /// The account name.
    pub user: String,
    /// The password, never printed.
    password: String,
}

impl Credentials {
    /// Credentials of `user` with `password`.
    pub(crate) fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            user: user.into(),
            password: password.into(),
        }
    }

    /// The value of the `Authorization` header.
    fn header(&self) -> String {
        let pair = format!("{}:{}", self.user, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .finish()
    }
}

/// Which certificates the BMC's may chain to.
#[derive(Debug, Clone)]
pub(crate) enum Trust {
    /// The Mozilla roots built into lowlat (a BMC with a publicly signed certificate).
    PublicRoots,
    /// The CA certificates of this PEM file.
    CaPem(Vec<u8>),
    /// No verification at all: anyone on the path can read the password.
    Insecure,
}

/// How to reach a BMC.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// `https://host[:port]`, or `http://` for a test bench; a path after it is ignored.
    pub url: String,
    /// Whom to log in as.
    pub credentials: Credentials,
    /// Which certificates to trust.
    pub trust: Trust,
    /// How long one request may take, connection included.
    pub timeout: Duration,
}

/// How many times one request's `timeout` every request to a BMC may take together: a BMC
/// that answers each request just in time cannot keep lowlat walking for ever.
pub(crate) const DEADLINE_REQUESTS: u32 = 4;

/// Why a request to the BMC failed. No variant holds the password.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RedfishError {
    /// The URL given cannot be used.
    #[error("--bmc {url}: {reason}")]
    Url {
        /// The URL as given, user information removed.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// HTTP 401.
    #[error(
        "{url}: the BMC refused the user name or password (HTTP 401); check --user and the password (--password-file or LOWLAT_BMC_PASSWORD)"
    )]
    Unauthorized {
        /// The resource asked for.
        url: String,
    },
    /// The requests together took longer than the deadline.
    #[error(
        "{url}: the BMC's answers took longer than {seconds} s in all ({DEADLINE_REQUESTS} times --timeout); give it longer with --timeout"
    )]
    Deadline {
        /// The resource asked for when the time ran out.
        url: String,
        /// The limit for all requests together, in seconds.
        seconds: u64,
    },
    /// No answer in time.
    #[error(
        "{url}: the BMC did not answer within {seconds} s; check the address, or give it longer with --timeout"
    )]
    Timeout {
        /// The resource asked for.
        url: String,
        /// The limit, in seconds.
        seconds: u64,
    },
    /// The certificate could not be verified.
    #[error(
        "{url}: the BMC's certificate is not trusted ({detail}); give the CA that signed it with --ca-file FILE (or --insecure to skip verification, which exposes the password)"
    )]
    Tls {
        /// The resource asked for.
        url: String,
        /// What the TLS library said.
        detail: String,
    },
    /// The port does not speak TLS (an https URL to a plain-HTTP server).
    #[error(
        "{url}: the BMC does not answer TLS on this port (a plain-HTTP server?); check the port, or give http:// if this is a test bench"
    )]
    NotTls {
        /// The resource asked for.
        url: String,
    },
    /// An HTTP redirect, which lowlat does not follow (it would send the password on).
    #[error("{url}: the BMC redirects (HTTP {status}) {where_to}; give that address with --bmc")]
    Redirect {
        /// The resource asked for.
        url: String,
        /// The HTTP status code (3xx).
        status: u16,
        /// `to LOCATION`, or that the answer has no Location header.
        where_to: String,
    },
    /// The connection could not be made.
    #[error("{url}: cannot reach the BMC ({detail})")]
    Connect {
        /// The resource asked for.
        url: String,
        /// What the network said.
        detail: String,
    },
    /// Any other HTTP error status, with the Redfish message when the body has one.
    #[error("{url}: the BMC answered HTTP {status}: {message}")]
    Status {
        /// The resource asked for.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The Redfish `error.message` (and its extended messages), escaped.
        message: String,
    },
    /// A reference the BMC gave (an `@odata.id`, a `SettingsObject`, a registry `Location`)
    /// that is not a path on the BMC given with `--bmc`: nothing is sent there.
    #[error(
        "{found_in}: the BMC refers to {reference:?}, which is not a path on {origin}; lowlat follows only references that start with / on the BMC given with --bmc, so nothing was sent there"
    )]
    Reference {
        /// The resource (or document) the reference was found in.
        found_in: String,
        /// The reference, escaped and shortened.
        reference: String,
        /// The BMC's `scheme://host[:port]`.
        origin: String,
    },
    /// The body is not the JSON expected.
    #[error("{url}: the BMC's answer is not the expected JSON ({detail})")]
    Json {
        /// The resource asked for.
        url: String,
        /// What is wrong.
        detail: String,
    },
}

/// A BMC to talk to: its origin and an HTTP agent set up for it.
pub(crate) struct Bmc {
    origin: String,
    authorization: String,
    agent: ureq::Agent,
    timeout: Duration,
    /// When every request must be done: [`DEADLINE_REQUESTS`] times `timeout` after [`Bmc::new`].
    deadline: Instant,
}

impl Bmc {
    /// Checks `endpoint` and prepares the agent; connects nothing yet.
    pub(crate) fn new(endpoint: &Endpoint) -> Result<Self, RedfishError> {
        let origin = origin_of(&endpoint.url)?;
        let tls = match &endpoint.trust {
            Trust::PublicRoots => ureq::tls::TlsConfig::builder().build(),
            Trust::CaPem(pem) => {
                let certs = ureq::tls::parse_pem(pem)
                    .filter_map(|item| match item {
                        Ok(ureq::tls::PemItem::Certificate(cert)) => Some(Ok(cert)),
                        Ok(_) => None,
                        Err(err) => Some(Err(err)),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| RedfishError::Url {
                        url: origin.clone(),
                        reason: "the --ca-file is not PEM; give the certificate in PEM form",
                    })?;
                if certs.is_empty() {
                    return Err(RedfishError::Url {
                        url: origin,
                        reason: "the --ca-file holds no certificate (BEGIN CERTIFICATE)",
                    });
                }
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::new_with_certs(&certs))
                    .build()
            }
            Trust::Insecure => ureq::tls::TlsConfig::builder()
                .disable_verification(true)
                .build(),
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls)
            .proxy(None)
            .timeout_global(Some(endpoint.timeout))
            .max_redirects(0)
            .build()
            .new_agent();
        Ok(Self {
            origin,
            authorization: endpoint.credentials.header(),
            agent,
            timeout: endpoint.timeout,
            deadline: Instant::now() + endpoint.timeout * DEADLINE_REQUESTS,
        })
    }

    /// `scheme://host[:port]`, as documents record the BMC.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// GETs the resource at `path` (an `@odata.id` found in the resource `found_in`), after
    /// checking that it is a path on this BMC.
    pub(crate) fn get(&self, found_in: &str, path: &str) -> Result<Value, RedfishError> {
        let url = self.url(found_in, path)?;
        let response = self
            .agent
            .get(&url)
            .config()
            .timeout_global(Some(self.time_left(&url)?))
            .build()
            .header("Authorization", &self.authorization)
            .header("Accept", "application/json")
            .call()
            .map_err(|err| self.transport_error(&url, err))?;
        self.json_of(&url, response)
    }

    /// PATCHes `body` to the resource at `path` (found in `found_in`), after checking that it
    /// is a path on this BMC; the answer's body, when it has one.
    pub(crate) fn patch(
        &self,
        found_in: &str,
        path: &str,
        body: &Value,
    ) -> Result<Option<Value>, RedfishError> {
        let url = self.url(found_in, path)?;
        let response = self
            .agent
            .patch(&url)
            .config()
            .timeout_global(Some(self.time_left(&url)?))
            .build()
            .header("Authorization", &self.authorization)
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .map_err(|err| self.transport_error(&url, err))?;
        if response.status().as_u16() == 204 {
            return Ok(None);
        }
        self.json_of(&url, response).map(Some)
    }

    /// The URL of the reference `path` found in `found_in`: only a path on this BMC (it starts
    /// with one `/`, holds no `@`, `\`, space or control character, and the whole URL parses
    /// to this BMC's scheme, host and port), so that a BMC cannot send the credentials, or a
    /// PATCH, elsewhere.
    fn url(&self, found_in: &str, path: &str) -> Result<String, RedfishError> {
        let refuse = || RedfishError::Reference {
            found_in: shorten(found_in),
            reference: shorten(path),
            origin: self.origin.clone(),
        };
        let plain = path.starts_with('/')
            && !path.starts_with("//")
            && !path
                .chars()
                .any(|c| c == '@' || c == '\\' || c.is_whitespace() || c.is_control());
        if !plain {
            return Err(refuse());
        }
        let url = format!("{}{}", self.origin, path);
        let uri: ureq::http::Uri = url.parse().map_err(|_| refuse())?;
        let same = uri.scheme_str() == Some(self.scheme())
            && uri.authority().map(|a| a.as_str()) == Some(self.authority());
        if same { Ok(url) } else { Err(refuse()) }
    }

    /// How long the request for `url` may take: `timeout`, or less when the deadline is nearer.
    fn time_left(&self, url: &str) -> Result<Duration, RedfishError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.deadline_error(url));
        }
        Ok(left.min(self.timeout))
    }

    fn deadline_error(&self, url: &str) -> RedfishError {
        RedfishError::Deadline {
            url: url.to_string(),
            seconds: (self.timeout * DEADLINE_REQUESTS).as_secs(),
        }
    }

    /// `https` or `http`.
    fn scheme(&self) -> &str {
        self.origin.split("://").next().unwrap_or_default()
    }

    /// `host[:port]`.
    fn authority(&self) -> &str {
        self.origin.split("://").nth(1).unwrap_or_default()
    }

    fn json_of(
        &self,
        url: &str,
        mut response: ureq::http::Response<ureq::Body>,
    ) -> Result<Value, RedfishError> {
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            let location = response
                .headers()
                .get("location")
                .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
            return Err(RedfishError::Redirect {
                url: url.to_string(),
                status,
                where_to: match location {
                    Some(location) => format!("to {}", shorten(&location)),
                    None => "without saying where (no Location header)".to_string(),
                },
            });
        }
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|err| self.transport_error(url, err))?;
        match status {
            200..=299 => serde_json::from_str(&text).map_err(|err| RedfishError::Json {
                url: url.to_string(),
                detail: err.to_string(),
            }),
            401 => Err(RedfishError::Unauthorized {
                url: url.to_string(),
            }),
            _ => Err(RedfishError::Status {
                url: url.to_string(),
                status,
                message: redfish_message(&text),
            }),
        }
    }

    fn transport_error(&self, url: &str, err: ureq::Error) -> RedfishError {
        let url = url.to_string();
        match err {
            ureq::Error::Timeout(_) if Instant::now() >= self.deadline => self.deadline_error(&url),
            ureq::Error::Timeout(_) => RedfishError::Timeout {
                url,
                seconds: self.timeout.as_secs(),
            },
            _ if not_tls(&err) => RedfishError::NotTls { url },
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) => RedfishError::Tls {
                url,
                detail: tls_detail(err.to_string()),
            },
            ureq::Error::Io(io) if is_tls(&io) => RedfishError::Tls {
                url,
                detail: tls_detail(io.to_string()),
            },
            other => RedfishError::Connect {
                url,
                detail: other.to_string(),
            },
        }
    }
}

/// What rustls said, with what it means for a self-signed BMC certificate (a CA certificate
/// presented as the server's own), which cannot be trusted by giving it as the CA.
fn tls_detail(said: String) -> String {
    if said.contains("CaUsedAsEndEntity") {
        format!(
            "{said}: the BMC presents a self-signed certificate; have it signed by your CA (BMCs make a CSR) and give that CA"
        )
    } else {
        said
    }
}

/// Whether the peer answered the TLS handshake with something that is not TLS.
fn not_tls(err: &ureq::Error) -> bool {
    let rustls = match err {
        ureq::Error::Rustls(r) => Some(r),
        ureq::Error::Io(io) => io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    matches!(
        rustls,
        Some(rustls::Error::InappropriateMessage { .. } | rustls::Error::InvalidMessage(_))
    )
}

/// Whether an I/O error is rustls refusing the peer (ureq passes handshake failures as I/O).
fn is_tls(io: &std::io::Error) -> bool {
    io.get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>())
}

/// `scheme://host[:port]` of `url`; a URL with user information is refused, so that a password
/// never sits in argv.
fn origin_of(url: &str) -> Result<String, RedfishError> {
    let refuse = |reason| RedfishError::Url {
        url: url.rsplit('@').next().unwrap_or_default().to_string(),
        reason,
    };
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|_| refuse("not a URL; give https://HOST[:PORT]"))?;
    let scheme = uri
        .scheme_str()
        .ok_or_else(|| refuse("no scheme; give https://HOST[:PORT]"))?;
    if scheme != "https" && scheme != "http" {
        return Err(refuse("the scheme must be https (or http on a test bench)"));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| refuse("no host; give https://HOST[:PORT]"))?;
    if authority.as_str().contains('@') {
        return Err(refuse(
            "user information in the URL would put the password in argv; give --user and --password-file instead",
        ));
    }
    Ok(format!("{scheme}://{authority}"))
}

/// The most characters of a reference, or of a BMC's error message, shown in an error.
const SHOWN: usize = 500;

/// `text` cut to [`SHOWN`] characters and escaped, to show a BMC-supplied string in a message.
fn shorten(text: &str) -> String {
    escape_controls(&text::shorten(text, SHOWN)).into_owned()
}

/// The Redfish error message of an error body (`error.message` and each
/// `@Message.ExtendedInfo[].Message`), cut to [`SHOWN`] characters and escaped; the
/// start of the body when it has none.
fn redfish_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let mut parts: Vec<String> = Vec::new();
    if let Some(message) = error.and_then(|e| e.get("message")).and_then(Value::as_str) {
        parts.push(message.to_string());
    }
    let extended = error
        .and_then(|e| e.get("@Message.ExtendedInfo"))
        .and_then(Value::as_array);
    for info in extended.into_iter().flatten() {
        if let Some(message) = info.get("Message").and_then(Value::as_str) {
            parts.push(message.to_string());
        }
    }
    if parts.is_empty() {
        parts.push(body.chars().take(200).collect());
    }
    shorten(&parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_drops_the_path_and_refuses_user_information() {
        assert_eq!(
            origin_of("https://bmc1.example:8443/redfish/v1").unwrap(),
            "https://bmc1.example:8443"
        );
        let err = origin_of("https://root:hunter2@bmc1").unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("--password-file"), "{text}");
        assert!(origin_of("ftp://bmc1").is_err());
        assert!(origin_of("bmc1").is_err());
    }

    #[test]
    fn only_paths_on_the_bmc_given_are_followed() {
        let bmc = Bmc::new(&Endpoint {
            url: "https://bmc1.example:8443".into(),
            credentials: Credentials::new("admin", "hunter2"),
            trust: Trust::Insecure,
            timeout: Duration::from_secs(1),
        })
        .unwrap();
        assert_eq!(
            bmc.url("/redfish/v1", "/redfish/v1/Systems/1?$expand=.")
                .unwrap(),
            "https://bmc1.example:8443/redfish/v1/Systems/1?$expand=."
        );
        for hostile in [
            "@evil:8444/redfish/v1/Systems/1",
            "/x@evil:8444",
            "//evil/redfish",
            "https://bmc1.example:8443/redfish/v1",
            "https://evil/redfish/v1",
            "redfish/v1",
            "/redfish/v1\\..",
            "/redfish/v1 x",
            "/redfish/\u{1b}[31m",
            "",
        ] {
            let err = bmc.url("/redfish/v1/Systems", hostile).unwrap_err();
            let text = err.to_string();
            assert!(
                text.starts_with("/redfish/v1/Systems: the BMC refers to"),
                "{text}"
            );
            assert!(!text.contains('\u{1b}'), "{text}");
        }
    }

    #[test]
    fn debug_hides_the_password() {
        let text = format!("{:?}", Credentials::new("admin", "hunter2"));
        assert!(
            text.contains("admin") && !text.contains("hunter2"),
            "{text}"
        );
    }

    #[test]
    fn the_redfish_message_is_taken_from_the_error_body() {
        let body = r#"{"error":{"code":"Base.1.0.GeneralError","message":"bad","@Message.ExtendedInfo":[{"Message":"no \u001b[31m such attribute"}]}}"#;
        assert_eq!(redfish_message(body), "bad; no \\x1b[31m such attribute");
        assert_eq!(redfish_message("plain"), "plain");
        let flood = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(189_000));
        let shown = redfish_message(&flood);
        assert!(
            shown.len() < 600 && shown.ends_with("… (188500 characters more)"),
            "{}",
            &shown[shown.len() - 40..]
        );
    }
}
