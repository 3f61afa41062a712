//! The site as a whole: creating it (`setup`), its settings, the configuration registry and
//! control panels, actions, translated messages, the site profile (Plone's or Nick's answers), health, keyspace figures, schema migrations, and
//! the wiring of the event subscribers (`registry`).

pub mod actions;
pub mod configuration;
pub mod controlpanels;
pub mod health;
pub mod i18n;
pub mod migrations;
pub mod nick_defaults;
pub mod profile;
pub mod registry;
pub mod settings;
pub mod setup;
pub mod statistics;
