//! The HTTP side of Redfish: one BMC, reached over HTTPS (or HTTP on a test bench) with HTTP
//! basic authentication, JSON in and out. The password lives only in the `Authorization`
//! header of each request: it is in no error, no `Debug` output and no document.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::text::escape_controls;

/// The user name and password of a BMC account. `Debug` shows the user only.
#[derive(Clone)]
pub struct Credentials {
    /// The account name.
    pub user: String,
    /// The password, never printed.
    password: String,
}

impl Credentials {
    /// Credentials of `user` with `password`.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
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
pub enum Trust {
    /// The Mozilla roots built into lowlat (a BMC with a publicly signed certificate).
    PublicRoots,
    /// The CA certificates of this PEM file.
    CaPem(Vec<u8>),
    /// No verification at all: anyone on the path can read the password.
    Insecure,
}

/// How to reach a BMC.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `https://host[:port]`, or `http://` for a test bench; a path after it is ignored.
    pub url: String,
    /// Whom to log in as.
    pub credentials: Credentials,
    /// Which certificates to trust.
    pub trust: Trust,
    /// How long one request may take, connection included.
    pub timeout: Duration,
}

/// Why a request to the BMC failed. No variant holds the password.
#[derive(Debug, thiserror::Error)]
pub enum RedfishError {
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
pub struct Bmc {
    origin: String,
    authorization: String,
    agent: ureq::Agent,
    timeout: Duration,
}

impl Bmc {
    /// Checks `endpoint` and prepares the agent; connects nothing yet.
    pub fn new(endpoint: &Endpoint) -> Result<Self, RedfishError> {
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
        })
    }

    /// `scheme://host[:port]`, as documents record the BMC.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// GETs the resource at `path` (an `@odata.id`).
    pub fn get(&self, path: &str) -> Result<Value, RedfishError> {
        let url = self.url(path);
        let response = self
            .agent
            .get(&url)
            .header("Authorization", &self.authorization)
            .header("Accept", "application/json")
            .call()
            .map_err(|err| self.transport_error(&url, err))?;
        self.json_of(&url, response)
    }

    /// PATCHes `body` to the resource at `path`; the answer's body, when it has one.
    pub fn patch(&self, path: &str, body: &Value) -> Result<Option<Value>, RedfishError> {
        let url = self.url(path);
        let response = self
            .agent
            .patch(&url)
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

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.origin, path)
    }

    fn json_of(
        &self,
        url: &str,
        mut response: ureq::http::Response<ureq::Body>,
    ) -> Result<Value, RedfishError> {
        let status = response.status().as_u16();
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
            ureq::Error::Timeout(_) => RedfishError::Timeout {
                url,
                seconds: self.timeout.as_secs(),
            },
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

/// The Redfish error message of an error body (`error.message` and each
/// `@Message.ExtendedInfo[].Message`), escaped; the start of the body when it has none.
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
    escape_controls(&parts.join("; ")).into_owned()
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
    }
}
