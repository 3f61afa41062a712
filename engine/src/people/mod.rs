//! People and what they may do: authentication (users, groups, passwords, tokens), accounts
//! (registration, password reset, the user schema), permission decisions on objects, and sharing
//! (local roles).

pub mod accounts;
pub mod auth;
pub mod permissions;
pub mod roles;
pub mod sharing;
