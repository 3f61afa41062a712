//! JSON Web Tokens signed with HMAC-SHA256 (HS256) and the site's secret.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The claims of a login token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The login.
    pub sub: String,
    /// The user's full name.
    pub fullname: String,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Token id (revoked on logout).
    pub jti: String,
    /// The user's uid ([`super::users::UserRecord::uid`]): a token never names a later user
    /// created with the same login.
    #[serde(default)]
    pub uid: String,
    /// The user's credential version when the token was issued
    /// ([`super::users::UserRecord::credential_version`]): a change of password, or a logout of
    /// all sessions, moves it on and so ends the token (a change of roles does not).
    #[serde(default)]
    pub cv: u64,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts of JSON.
    #[error("the token is malformed")]
    Malformed,
    /// The signature does not match.
    #[error("the token's signature is invalid")]
    BadSignature,
    /// Past its expiry.
    #[error("the token has expired")]
    Expired,
}

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

fn mac(secret: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
}

/// Sign `claims` with `secret`.
pub fn sign(claims: &Claims, secret: &[u8]) -> String {
    let payload = serde_json::to_vec(claims).unwrap_or_default();
    let signing_input = format!("{}.{}", B64.encode(HEADER), B64.encode(payload));
    let mut m = mac(secret);
    m.update(signing_input.as_bytes());
    let sig = m.finalize().into_bytes();
    format!("{signing_input}.{}", B64.encode(sig))
}

/// Check `token`'s signature and expiry at time `now` (seconds), returning its claims.
pub fn verify(token: &str, secret: &[u8], now: i64) -> Result<Claims, TokenError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let header: serde_json::Value = B64
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(TokenError::Malformed)?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(TokenError::Malformed);
    }
    let sig = B64.decode(s).map_err(|_| TokenError::Malformed)?;
    let mut m = mac(secret);
    m.update(h.as_bytes());
    m.update(b".");
    m.update(p.as_bytes());
    m.verify_slice(&sig).map_err(|_| TokenError::BadSignature)?;
    let claims: Claims = B64
        .decode(p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(TokenError::Malformed)?;
    if claims.exp <= now {
        return Err(TokenError::Expired);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            sub: "admin".into(),
            fullname: "Admin".into(),
            iat: 100,
            exp: 200,
            jti: "j1".into(),
            uid: "u1".into(),
            cv: 3,
        }
    }

    #[test]
    fn round_trip_and_refusals() {
        let t = sign(&claims(), b"k");
        assert_eq!(verify(&t, b"k", 150), Ok(claims()));
        assert_eq!(verify(&t, b"other", 150), Err(TokenError::BadSignature));
        assert_eq!(verify(&t, b"k", 200), Err(TokenError::Expired));
        assert_eq!(verify("a.b", b"k", 150), Err(TokenError::Malformed));
        let mut forged = t.clone();
        forged.insert(t.find('.').unwrap() + 2, 'x');
        assert!(verify(&forged, b"k", 150).is_err());
    }
}
