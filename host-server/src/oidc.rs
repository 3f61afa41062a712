//! Single sign-on with OpenID Connect: the protocol side, which needs the network (the engine,
//! which builds for the browser too, does none).
//!
//! The operator lists providers in a TOML file (`--oidc-config`, [`SsoConfig`]). For each, the
//! server serves what `pas.plugins.oidc` serves to Volto's `@plone-collective/volto-authomatic`
//! add-on (the engine answers `GET @login`, the list of login options, from
//! [`engine::LoginOptions`]); the same endpoints also answer under `@login-authomatic/<provider>`,
//! the name `pas.plugins.authomatic` serves them under, which the add-on's (2.0.1) login button
//! calls for every provider but one whose id is `oidc`:
//!
//! - `GET @login-oidc/<provider>`: discovers the provider (`.well-known/openid-configuration`,
//!   and its keys; both kept for `discovery_cache_seconds`), remembers a fresh state, nonce and
//!   PKCE verifier for ten minutes and answers
//!   `{"next_url": <the provider's authorization URL>, "came_from": null, "session": <id>}`
//!   with the same id in the `oidc_session` cookie;
//! - `POST @login-oidc/<provider>` `{"qs": "?code=...&state=...", "session": ...}` (the query
//!   string the provider sent the browser back with): the state must be one this server issued,
//!   not yet used, to the same browser session (cookie or `session`); the code is exchanged
//!   with the PKCE verifier, the ID token's signature is verified against the provider's keys
//!   (read again once when the token names a key they lack: the provider rotated its keys),
//!   and its issuer, audience, expiry and nonce are checked (the `openidconnect` crate); its
//!   claims, mapped as configured, go to the engine ([`engine::Engine::log_in_external`]),
//!   which creates or updates the user and its groups and issues the token: `{"token": ...}`.
//!
//! A provider that cannot be reached is a 502 with a JSON error; a refused token a 401; in
//! neither case is anything written. The pending logins live in this process's memory: a login
//! started before a restart (or on another server behind the same balancer) must be started
//! again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use engine::{Engine, EngineError, ExternalIdentity, LoginOptions, LoginProvider, Store};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreIdToken};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IssuerUrl, JsonWebKeySet, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, ProviderMetadataWithLogout, RedirectUrl, Scope,
    SignatureVerificationError, TokenResponse,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::ServerError;

/// How long a started login may take to come back.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// The most logins that may be pending at once (beyond it, the oldest is forgotten).
const MAX_PENDING: usize = 10_000;
/// The cookie that ties a login's state to the browser that started it.
pub const SESSION_COOKIE: &str = "oidc_session";
/// The path segment of the login endpoints.
const SEGMENT: &str = "@login-oidc";
/// The same endpoints under `pas.plugins.authomatic`'s name.
const AUTHOMATIC_SEGMENT: &str = "@login-authomatic";
/// The path segment of the logout endpoint.
const LOGOUT_SEGMENT: &str = "@logout-oidc";
/// How long a provider's discovery document and keys are used before they are read again, when
/// its configuration does not say (`discovery_cache_seconds`).
pub const DISCOVERY_CACHE_SECS: u64 = 900;

/// The `--oidc-config` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsoConfig {
    /// The providers, in the order the login form lists them.
    #[serde(rename = "provider", default)]
    pub providers: Vec<ProviderConfig>,
}

/// One OpenID provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Its id here (a path segment: letters, digits, `-`, `_`, `.`).
    pub id: String,
    /// What the login form shows ("Log in with <title>"); the id when absent.
    #[serde(default)]
    pub title: Option<String>,
    /// The issuer URL; its `.well-known/openid-configuration` (and the keys it points at) is
    /// read at the first login and again when [`ProviderConfig::discovery_cache_seconds`] passed.
    pub issuer: String,
    /// The client id registered at the provider.
    pub client_id: String,
    /// The client secret.
    #[serde(default)]
    pub client_secret: Option<String>,
    /// The environment variable holding the client secret (instead of `client_secret`).
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The scopes asked for besides `openid` (default `profile`, `email`).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// Where the provider sends the browser back: Volto's `/login-oidc/<id>` route. When
    /// absent, `<the request's base URL>/login-oidc/<id>`.
    #[serde(default)]
    pub redirect_uri: Option<String>,
    /// Which claims of the ID token give the login, full name, e-mail and groups.
    #[serde(default)]
    pub claims: ClaimMap,
    /// A local account with a password and the same login may be logged in as through this
    /// provider (off by default: the provider's users could otherwise take over local accounts).
    #[serde(default)]
    pub link_existing_users: bool,
    /// How long the discovery document and the provider's keys are kept (default
    /// [`DISCOVERY_CACHE_SECS`]; 0: read at every login). A key the provider retired is trusted
    /// at most this long; a new one is read at once (an ID token naming an unknown key).
    #[serde(default)]
    pub discovery_cache_seconds: Option<u64>,
}

fn default_scopes() -> Vec<String> {
    vec!["profile".into(), "email".into()]
}

/// Claim names of the ID token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimMap {
    /// The login (default `sub`, the provider's stable id; `preferred_username` or `email`
    /// give readable logins when the provider keeps them unique).
    #[serde(default = "default_login_claim")]
    pub login: String,
    /// The full name (default `name`).
    #[serde(default = "default_fullname_claim")]
    pub fullname: String,
    /// The e-mail address (default `email`).
    #[serde(default = "default_email_claim")]
    pub email: String,
    /// The groups (a list of group ids, or one). When set, the user's groups here are kept in
    /// step with it at every login; when absent, groups are left alone.
    #[serde(default)]
    pub groups: Option<String>,
}

impl Default for ClaimMap {
    fn default() -> Self {
        ClaimMap {
            login: default_login_claim(),
            fullname: default_fullname_claim(),
            email: default_email_claim(),
            groups: None,
        }
    }
}

fn default_login_claim() -> String {
    "sub".into()
}
fn default_fullname_claim() -> String {
    "name".into()
}
fn default_email_claim() -> String {
    "email".into()
}

/// A login started by `GET @login-oidc/<provider>`, waiting for the browser to come back.
struct Pending {
    provider: String,
    session: String,
    nonce: Nonce,
    verifier: PkceCodeVerifier,
    redirect_uri: String,
    started: Instant,
}

/// The configured providers and the logins under way.
pub struct Sso {
    providers: Vec<Provider>,
    http: openidconnect::reqwest::Client,
    pending: Mutex<HashMap<String, Pending>>,
}

impl std::fmt::Debug for Sso {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secrets stay out of the logs.
        let ids: Vec<&str> = self.providers.iter().map(|p| p.cfg.id.as_str()).collect();
        f.debug_struct("Sso").field("providers", &ids).finish()
    }
}

struct Provider {
    cfg: ProviderConfig,
    secret: Option<String>,
    /// What discovery read last, and when.
    discovered: Mutex<Option<Discovered>>,
}

/// A provider's discovery document with its keys.
struct Discovered {
    metadata: ProviderMetadataWithLogout,
    fetched: Instant,
}

impl Provider {
    fn discovered(&self) -> std::sync::MutexGuard<'_, Option<Discovered>> {
        // A panic while holding it leaves a value that is still whole.
        self.discovered.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cache_for(&self) -> Duration {
        Duration::from_secs(
            self.cfg
                .discovery_cache_seconds
                .unwrap_or(DISCOVERY_CACHE_SECS),
        )
    }

    /// A 502: the provider cannot be reached or answered nonsense.
    fn down(&self, e: &dyn std::fmt::Display) -> EngineError {
        EngineError::BadGateway(format!(
            "The identity provider '{}' cannot be reached or answered wrongly: {e}",
            self.cfg.id
        ))
    }
}

impl Sso {
    /// Read and check the `--oidc-config` file.
    pub fn load(path: &Path) -> Result<Sso, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Config(format!("cannot read --oidc-config {}: {e}", path.display()))
        })?;
        let cfg: SsoConfig = toml::from_str(&text)
            .map_err(|e| ServerError::Config(format!("--oidc-config {}: {e}", path.display())))?;
        Sso::new(cfg)
    }

    /// The providers of `cfg`, checked: ids unique and usable as a path segment, URLs that
    /// parse, a secret that is there.
    pub fn new(cfg: SsoConfig) -> Result<Sso, ServerError> {
        let bad = |msg: String| ServerError::Config(format!("--oidc-config: {msg}"));
        let mut providers: Vec<Provider> = Vec::new();
        for p in cfg.providers {
            let id_ok = !p.id.is_empty()
                && p.id.len() <= 64
                && p.id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !id_ok {
                return Err(bad(format!(
                    "provider id {:?} must be 1 to 64 letters, digits, '-', '_' or '.'",
                    p.id
                )));
            }
            if providers.iter().any(|q| q.cfg.id == p.id) {
                return Err(bad(format!("provider id {:?} is given twice", p.id)));
            }
            IssuerUrl::new(p.issuer.clone())
                .map_err(|e| bad(format!("provider {}: issuer {:?}: {e}", p.id, p.issuer)))?;
            if let Some(uri) = &p.redirect_uri {
                RedirectUrl::new(uri.clone())
                    .map_err(|e| bad(format!("provider {}: redirect_uri {uri:?}: {e}", p.id)))?;
            }
            let secret = match (&p.client_secret, &p.client_secret_env) {
                (Some(_), Some(_)) => {
                    return Err(bad(format!(
                        "provider {}: give client_secret or client_secret_env, not both",
                        p.id
                    )))
                }
                (Some(s), None) => Some(s.clone()),
                (None, Some(var)) => Some(std::env::var(var).map_err(|_| {
                    bad(format!(
                        "provider {}: the environment variable {var} (client_secret_env) is not set",
                        p.id
                    ))
                })?),
                (None, None) => None,
            };
            providers.push(Provider {
                cfg: p,
                secret,
                discovered: Mutex::new(None),
            });
        }
        let http = openidconnect::reqwest::ClientBuilder::new()
            // The provider's answers are read as they come: a redirect is never followed (an
            // SSRF guard the `openidconnect` crate asks for).
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .build()
            .map_err(|e| ServerError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Sso {
            providers,
            http,
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// What the engine lists at `GET @login`, with password login on or off.
    pub fn login_options(&self, password: bool) -> LoginOptions {
        LoginOptions {
            password,
            providers: self
                .providers
                .iter()
                .map(|p| LoginProvider {
                    id: p.cfg.id.clone(),
                    title: p.cfg.title.clone().unwrap_or_else(|| p.cfg.id.clone()),
                })
                .collect(),
        }
    }

    fn provider(&self, id: &str) -> Result<&Provider, EngineError> {
        self.providers
            .iter()
            .find(|p| p.cfg.id == id)
            .ok_or_else(|| EngineError::NotFound {
                url: format!("{SEGMENT}/{id}"),
                context: None,
            })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        // A panic while holding it leaves a map that is still whole.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The provider's discovery document and keys: the ones read last while they are younger
    /// than its `discovery_cache_seconds`, else read again (a 502 when it cannot be reached or
    /// answers nonsense; nothing is kept then).
    async fn metadata(&self, p: &Provider) -> Result<ProviderMetadataWithLogout, EngineError> {
        if let Some(d) = p.discovered().as_ref() {
            if d.fetched.elapsed() < p.cache_for() {
                return Ok(d.metadata.clone());
            }
        }
        let issuer = IssuerUrl::new(p.cfg.issuer.clone()).map_err(|e| p.down(&e))?;
        let metadata = ProviderMetadataWithLogout::discover_async(issuer, &self.http)
            .await
            .map_err(|e| p.down(&error_chain(&e)))?;
        *p.discovered() = Some(Discovered {
            metadata: metadata.clone(),
            fetched: Instant::now(),
        });
        Ok(metadata)
    }

    /// Read the provider's keys again (an ID token named a key `metadata` lacks: the provider
    /// rotated its keys) and keep them with the discovery document.
    async fn refetch_keys(
        &self,
        p: &Provider,
        metadata: ProviderMetadataWithLogout,
    ) -> Result<ProviderMetadataWithLogout, EngineError> {
        let keys = JsonWebKeySet::fetch_async(metadata.jwks_uri(), &self.http)
            .await
            .map_err(|e| p.down(&error_chain(&e)))?;
        tracing::info!(provider = %p.cfg.id, "single sign-on: the provider's keys were read again (unknown key id)");
        let metadata = metadata.set_jwks(keys);
        if let Some(d) = p.discovered().as_mut() {
            d.metadata = metadata.clone();
        }
        Ok(metadata)
    }

    /// A client for the provider described by `metadata`.
    fn client(
        &self,
        p: &Provider,
        metadata: ProviderMetadataWithLogout,
        redirect_uri: &str,
    ) -> Result<Client, EngineError> {
        let redirect = RedirectUrl::new(redirect_uri.to_string()).map_err(|e| {
            EngineError::bad_request(format!(
                "The redirect URI {redirect_uri:?} is not a URL: {e}"
            ))
        })?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(p.cfg.client_id.clone()),
            p.secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// `GET @logout-oidc[/<id>]`: where the browser goes to end its session at the provider
    /// (its `end_session_endpoint`, coming back to the site), as `pas.plugins.oidc` answers
    /// it: `{"next_url", "came_from"}`. The site's own token is ended by `POST @logout`.
    async fn end_session(
        &self,
        id: Option<&str>,
        base_url: &str,
    ) -> Result<engine::Response, EngineError> {
        let p = match id {
            Some(id) => self.provider(id)?,
            None => self
                .providers
                .first()
                .ok_or_else(|| EngineError::NotFound {
                    url: LOGOUT_SEGMENT.to_string(),
                    context: None,
                })?,
        };
        let metadata = self.metadata(p).await?;
        let back = base_url.trim_end_matches('/').to_string();
        let next = match &metadata.additional_metadata().end_session_endpoint {
            Some(end) => {
                let mut u = end.url().clone();
                u.query_pairs_mut()
                    .append_pair("client_id", &p.cfg.client_id)
                    .append_pair("post_logout_redirect_uri", &back);
                u.to_string()
            }
            None => back.clone(),
        };
        Ok(
            engine::Response::json(200, &json!({"next_url": next, "came_from": back}))
                .with_header("Cache-Control", "no-store"),
        )
    }

    /// `GET @login-oidc/<id>`: start a login.
    async fn begin(
        &self,
        id: &str,
        base_url: &str,
        https: bool,
    ) -> Result<engine::Response, EngineError> {
        let p = self.provider(id)?;
        let redirect_uri = p
            .cfg
            .redirect_uri
            .clone()
            .unwrap_or_else(|| format!("{}/login-oidc/{id}", base_url.trim_end_matches('/')));
        let client = self.client(p, self.metadata(p).await?, &redirect_uri)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in p.cfg.scopes.iter().filter(|s| s.as_str() != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let session = CsrfToken::new_random().secret().clone();
        {
            let mut pending = self.pending();
            pending.retain(|_, v| v.started.elapsed() < PENDING_TTL);
            if pending.len() >= MAX_PENDING {
                // A flood of started logins pushes out the oldest, never the server's memory.
                let oldest = pending
                    .iter()
                    .min_by_key(|(_, v)| v.started)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    pending.remove(&k);
                }
            }
            pending.insert(
                state.secret().clone(),
                Pending {
                    provider: id.to_string(),
                    session: session.clone(),
                    nonce,
                    verifier,
                    redirect_uri,
                    started: Instant::now(),
                },
            );
        }
        let cookie = format!(
            "{SESSION_COOKIE}={session}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{}",
            PENDING_TTL.as_secs(),
            if https { "; Secure" } else { "" }
        );
        Ok(engine::Response::json(
            200,
            &json!({"next_url": url.as_str(), "came_from": null, "session": session}),
        )
        .with_header("Cache-Control", "no-store")
        .with_header("Set-Cookie", &cookie))
    }

    /// `POST @login-oidc/<id>`: finish a login; what the engine needs to log the user in.
    async fn finish(
        &self,
        id: &str,
        body: &[u8],
        cookie: Option<String>,
    ) -> Result<ExternalIdentity, EngineError> {
        let p = self.provider(id)?;
        let body: FinishBody = serde_json::from_slice(body).map_err(|e| {
            EngineError::bad_request(format!(
                "The body must be {{\"qs\": \"?code=...&state=...\", \"session\": ...}}: {e}"
            ))
        })?;
        let qs = body.qs.unwrap_or_default();
        let params: HashMap<String, String> =
            url::form_urlencoded::parse(qs.trim_start_matches('?').as_bytes())
                .into_owned()
                .collect();
        if let Some(error) = params.get("error") {
            let detail = params.get("error_description").map_or("", String::as_str);
            return Err(EngineError::Unauthorized(format!(
                "The identity provider '{id}' refused the login: {error} {detail}"
            )));
        }
        // RFC 9207: a provider that names itself must be the one asked (mix-up defence).
        if let Some(iss) = params.get("iss") {
            if iss.trim_end_matches('/') != p.cfg.issuer.trim_end_matches('/') {
                return Err(EngineError::Unauthorized(format!(
                    "The answer names the issuer {iss:?}, not the provider '{id}'"
                )));
            }
        }
        let (Some(code), Some(state)) = (params.get("code"), params.get("state")) else {
            return Err(EngineError::bad_request(
                "Property 'qs' must hold the provider's 'code' and 'state'",
            ));
        };
        let pending = {
            let mut map = self.pending();
            let fits = map.get(state).is_some_and(|v| {
                v.provider == id
                    && v.started.elapsed() < PENDING_TTL
                    && [body.session.as_deref(), cookie.as_deref()]
                        .into_iter()
                        .flatten()
                        .any(|s| s == v.session)
            });
            if !fits {
                return Err(EngineError::Unauthorized(
                    "The login's state is unknown, expired, already used or from another \
                     browser: start the login again"
                        .into(),
                ));
            }
            map.remove(state)
        };
        let Some(pending) = pending else {
            return Err(EngineError::Unauthorized(
                "The login's state is unknown".into(),
            ));
        };
        let metadata = self.metadata(p).await?;
        let client = self.client(p, metadata.clone(), &pending.redirect_uri)?;
        let response = client
            .exchange_code(AuthorizationCode::new(code.clone()))
            .map_err(|e| {
                EngineError::BadGateway(format!(
                    "The identity provider '{id}' has no token endpoint: {e}"
                ))
            })?
            .set_pkce_verifier(pending.verifier)
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                openidconnect::RequestTokenError::ServerResponse(r) => EngineError::Unauthorized(
                    format!("The identity provider '{id}' refused the code: {r}"),
                ),
                other => EngineError::BadGateway(format!(
                    "The identity provider '{id}' cannot be reached or answered wrongly: {}",
                    error_chain(&other)
                )),
            })?;
        let token: &CoreIdToken = response.id_token().ok_or_else(|| {
            EngineError::BadGateway(format!("The identity provider '{id}' sent no ID token"))
        })?;
        let refused = |e: ClaimsVerificationError| {
            EngineError::Unauthorized(format!(
                "The identity provider's ID token was refused: {}",
                error_chain(&e)
            ))
        };
        match token.claims(&client.id_token_verifier(), &pending.nonce) {
            Ok(_) => {}
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => {
                // Signed with a key the kept ones lack: the provider may have rotated its keys.
                // They are read again, once; a token no key verifies is refused.
                let metadata = self.refetch_keys(p, metadata).await?;
                let client = self.client(p, metadata, &pending.redirect_uri)?;
                token
                    .claims(&client.id_token_verifier(), &pending.nonce)
                    .map_err(refused)?;
            }
            Err(e) => return Err(refused(e)),
        }
        // Verified: its payload is what the provider signed.
        let claims = payload(token).ok_or_else(|| {
            EngineError::BadGateway(format!(
                "The identity provider '{id}' sent an unreadable ID token"
            ))
        })?;
        identity(p, &claims)
    }
}

/// The client type `CoreClient::from_provider_metadata` gives.
type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The body of `POST @login-oidc/<id>` (what `volto-authomatic` sends).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishBody {
    /// The query string the provider sent the browser back with.
    #[serde(default)]
    qs: Option<String>,
    /// The session id `GET @login-oidc/<id>` answered (the add-on loses it on the redirect
    /// and sends `null`; the cookie carries it then).
    #[serde(default)]
    session: Option<String>,
    /// The site's public URL, which the add-on sends to `@login-authomatic` (unused: the
    /// redirect URI is the one the login started with).
    #[serde(default, rename = "publicUrl")]
    _public_url: Option<serde::de::IgnoredAny>,
}

/// An error and its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The claims of a (verified) ID token as JSON.
fn payload(token: &CoreIdToken) -> Option<serde_json::Map<String, Value>> {
    let compact = token.to_string();
    let part = compact.split('.').nth(1)?;
    serde_json::from_slice(&B64.decode(part.trim_end_matches('=')).ok()?).ok()
}

/// The identity the claims give, mapped as the provider's configuration says.
fn identity(
    p: &Provider,
    claims: &serde_json::Map<String, Value>,
) -> Result<ExternalIdentity, EngineError> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
    let map = &p.cfg.claims;
    let login = text(&map.login).ok_or_else(|| {
        EngineError::Unauthorized(format!(
            "The identity provider '{}' sent no '{}' claim (the login)",
            p.cfg.id, map.login
        ))
    })?;
    let groups = match &map.groups {
        None => None,
        Some(name) => Some(match claims.get(name) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        EngineError::Unauthorized(format!(
                            "The identity provider '{}' sent a '{name}' claim that is not a list \
                             of strings",
                            p.cfg.id
                        ))
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(EngineError::Unauthorized(format!(
                    "The identity provider '{}' sent a '{name}' claim that is not a list of \
                     strings",
                    p.cfg.id
                )))
            }
        }),
    };
    Ok(ExternalIdentity {
        provider: p.cfg.id.clone(),
        login,
        fullname: text(&map.fullname),
        email: text(&map.email),
        groups,
        link_existing: p.cfg.link_existing_users,
    })
}

/// Answer a request to `@login-oidc/<id>` (`GET` starts a login, `POST` finishes it) or
/// `@logout-oidc` (`GET`: where to send the browser to end its session at the provider);
/// `None` for other methods (the caller answers 405).
pub async fn handle<S>(
    sso: &Sso,
    engine: &Arc<Engine<S>>,
    method: &str,
    target: Target<'_>,
    request: (&[(String, String)], &[u8]),
    base_url: &str,
) -> Option<engine::Response>
where
    S: Store + Send + Sync + 'static,
{
    let (headers, body) = request;
    let https = base_url.starts_with("https:");
    let id = match target {
        Target::Login(id) => id,
        Target::Logout(id) => {
            if method != "GET" {
                return None;
            }
            return Some(
                sso.end_session(id, base_url)
                    .await
                    .unwrap_or_else(EngineError::into_response),
            );
        }
    };
    let answer = match method {
        "GET" => sso.begin(id, base_url, https).await,
        "POST" => match sso.finish(id, body, session_cookie(headers)).await {
            Ok(identity) => {
                let engine = engine.clone();
                match tokio::task::spawn_blocking(move || engine.log_in_external(&identity)).await {
                    Ok(Ok(token)) => Ok(engine::Response::json(
                        200,
                        &json!({"token": token, "next_url": null}),
                    )
                    .with_header("Cache-Control", "no-store")
                    .with_header(
                        "Set-Cookie",
                        &format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"),
                    )),
                    Ok(Err(e)) => Err(e),
                    Err(e) => Err(EngineError::Internal(format!("the login task failed: {e}"))),
                }
            }
            Err(e) => Err(e),
        },
        _ => return None,
    };
    Some(answer.unwrap_or_else(|e| {
        tracing::info!(provider = id, error = %e, "single sign-on refused");
        e.into_response()
    }))
}

/// Which single sign-on endpoint a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'p> {
    /// `@login-oidc/<id>` (or `@login-authomatic/<id>`).
    Login(&'p str),
    /// `@logout-oidc` (the first provider) or `@logout-oidc/<id>`.
    Logout(Option<&'p str>),
}

/// The endpoint `path` names, if it is one of [`Target`] (with any prefix: `/++api++`, a site
/// path).
pub fn target(path: &str) -> Option<Target<'_>> {
    let (rest, last) = path.trim_end_matches('/').rsplit_once('/')?;
    if last == LOGOUT_SEGMENT {
        return Some(Target::Logout(None));
    }
    match rest.rsplit('/').next() {
        Some(SEGMENT | AUTHOMATIC_SEGMENT) if !last.is_empty() => Some(Target::Login(last)),
        Some(LOGOUT_SEGMENT) if !last.is_empty() => Some(Target::Logout(Some(last))),
        _ => None,
    }
}

/// The browser session id the request carries in its [`SESSION_COOKIE`] cookie.
fn session_cookie(headers: &[(String, String)]) -> Option<String> {
    headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == SESSION_COOKIE)
        .map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(groups: Option<&str>) -> Provider {
        let cfg: SsoConfig = toml::from_str(&format!(
            "[[provider]]\nid = \"p\"\nissuer = \"https://id.example.org\"\nclient_id = \"c\"\n\
             [provider.claims]\nlogin = \"preferred_username\"\n{}",
            groups.map_or(String::new(), |g| format!("groups = \"{g}\"\n"))
        ))
        .unwrap();
        let mut sso = Sso::new(cfg).unwrap();
        sso.providers.remove(0)
    }

    fn claims(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_endpoints_are_found_under_any_prefix() {
        assert_eq!(target("/@login-oidc/staff"), Some(Target::Login("staff")));
        assert_eq!(
            target("/++api++/@login-oidc/staff"),
            Some(Target::Login("staff"))
        );
        assert_eq!(
            target("/plone/@login-oidc/staff/"),
            Some(Target::Login("staff"))
        );
        assert_eq!(target("/++api++/@logout-oidc"), Some(Target::Logout(None)));
        assert_eq!(
            target("/@logout-oidc/staff"),
            Some(Target::Logout(Some("staff")))
        );
        assert_eq!(
            target("/++api++/@login-authomatic/staff"),
            Some(Target::Login("staff"))
        );
        assert_eq!(target("/@login-oidc"), None);
        assert_eq!(target("/@login-authomatic"), None);
        assert_eq!(target("/@login-oidc/staff/more"), None);
        assert_eq!(target("/@login"), None);
    }

    #[test]
    fn the_session_cookie_is_read_among_others() {
        let h = |v: &str| vec![("Cookie".to_string(), v.to_string())];
        assert_eq!(
            session_cookie(&h("a=1; oidc_session=xyz; b=2")),
            Some("xyz".into())
        );
        assert_eq!(session_cookie(&h("a=1")), None);
        assert_eq!(session_cookie(&[]), None);
    }

    #[test]
    fn claims_are_mapped_as_configured() {
        let p = provider(Some("roles"));
        let id = identity(
            &p,
            &claims(
                json!({"sub": "s", "preferred_username": "ann", "name": "Ann",
                           "roles": ["a", "b"]}),
            ),
        )
        .unwrap();
        assert_eq!(id.login, "ann");
        assert_eq!(id.fullname.as_deref(), Some("Ann"));
        assert_eq!(id.email, None);
        assert_eq!(id.groups, Some(vec!["a".to_string(), "b".to_string()]));
        // One group as a string; none at all is an empty list (the user leaves its groups).
        let one = identity(
            &p,
            &claims(json!({"preferred_username": "ann", "roles": "a"})),
        );
        assert_eq!(one.unwrap().groups, Some(vec!["a".to_string()]));
        let none = identity(&p, &claims(json!({"preferred_username": "ann"})));
        assert_eq!(none.unwrap().groups, Some(vec![]));
        // Groups not mapped: not touched.
        let unmapped = identity(
            &provider(None),
            &claims(json!({"preferred_username": "ann"})),
        );
        assert_eq!(unmapped.unwrap().groups, None);
        // Refused: no login claim, groups that are not strings.
        assert!(identity(&p, &claims(json!({"sub": "s"}))).is_err());
        assert!(identity(
            &p,
            &claims(json!({"preferred_username": "a", "roles": [1]}))
        )
        .is_err());
    }

    #[test]
    fn a_bad_configuration_says_what_is_wrong() {
        let err = |text: &str| {
            Sso::new(toml::from_str(text).unwrap())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let base = "issuer = \"https://id.example.org\"\nclient_id = \"c\"\n";
        assert!(err(&format!("[[provider]]\nid = \"a/b\"\n{base}")).contains("provider id"));
        assert!(err(&format!(
            "[[provider]]\nid = \"a\"\n{base}[[provider]]\nid = \"a\"\n{base}"
        ))
        .contains("given twice"));
        assert!(
            err("[[provider]]\nid = \"a\"\nissuer = \"not a url\"\nclient_id = \"c\"\n")
                .contains("issuer")
        );
        assert!(err(&format!(
            "[[provider]]\nid = \"a\"\n{base}client_secret_env = \"OIDC_TEST_SURELY_UNSET_VAR\"\n"
        ))
        .contains("OIDC_TEST_SURELY_UNSET_VAR"));
        assert!(toml::from_str::<SsoConfig>(
            "[[provider]]\nid = \"a\"\nissuer = \"x\"\nclient_id = \"c\"\nbogus = 1\n"
        )
        .is_err());
    }
}
