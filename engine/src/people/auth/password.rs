//! Password hashing with argon2id (salted, deliberately slow), stored as PHC strings.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::core::clock::Entropy;
use crate::core::error::{EngineError, Result};

/// Argon2id cost parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PasswordCost {
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Iterations.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

impl PasswordCost {
    /// OWASP's recommended argon2id setting (19 MiB, 2 iterations, 1 lane).
    pub const PRODUCTION: PasswordCost = PasswordCost {
        memory_kib: 19 * 1024,
        iterations: 2,
        parallelism: 1,
    };
    /// A cheap setting for tests only.
    pub const TESTING: PasswordCost = PasswordCost {
        memory_kib: 64,
        iterations: 1,
        parallelism: 1,
    };
}

/// Hash `password` with a fresh salt.
pub fn hash(password: &str, cost: PasswordCost, entropy: &dyn Entropy) -> Result<String> {
    let params = Params::new(cost.memory_kib, cost.iterations, cost.parallelism, None)
        .map_err(|e| EngineError::Internal(format!("argon2 parameters: {e}")))?;
    let mut salt = [0u8; 16];
    entropy.fill(&mut salt);
    let salt =
        SaltString::encode_b64(&salt).map_err(|e| EngineError::Internal(format!("salt: {e}")))?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| EngineError::Internal(format!("hashing: {e}")))
}

/// Whether `password` matches the stored PHC string (its own parameters are used).
pub fn verify(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::SeededEntropy;

    #[test]
    fn hashes_verify_and_are_salted() {
        let e = SeededEntropy::new(1);
        let a = hash("secret", PasswordCost::TESTING, &e).unwrap();
        let b = hash("secret", PasswordCost::TESTING, &e).unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("$argon2id$"));
        assert!(verify("secret", &a) && verify("secret", &b));
        assert!(!verify("Secret", &a));
        assert!(!verify("secret", "not a hash"));
    }
}
