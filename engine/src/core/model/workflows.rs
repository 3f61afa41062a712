//! Workflows as data: states (with the permissions each state grants to which roles) and transitions.
//! A content type names its workflow in the type registry; new objects start in its initial state.
//! The state decides who may View and Modify an object (see [`crate::core::security`]). The service that
//! takes transitions and keeps the history is [`crate::content::workflow`].

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::core::error::{EngineError, Result};

/// The built-in workflow definitions.
pub const BUILTIN_WORKFLOWS: &str = include_str!("workflows.json");

/// One workflow state.
#[derive(Debug, Clone, Deserialize)]
pub struct State {
    /// Human title (e.g. "Private").
    pub title: String,
    /// Transition ids offered from this state.
    #[serde(default)]
    pub transitions: Vec<String>,
    /// Permission name → roles granted it in this state (overrides the site defaults).
    #[serde(default)]
    pub permissions: BTreeMap<String, Vec<String>>,
}

/// One transition.
#[derive(Debug, Clone, Deserialize)]
pub struct Transition {
    /// Human title (e.g. "Publish").
    pub title: String,
    /// The state it leads to.
    pub new_state: String,
    /// The permission the caller needs to take it.
    pub guard_permission: String,
}

/// A workflow.
#[derive(Debug, Clone, Deserialize)]
pub struct Workflow {
    /// Title of the workflow.
    pub title: String,
    /// The state of new objects.
    pub initial_state: String,
    /// States by id.
    pub states: BTreeMap<String, State>,
    /// Transitions by id.
    pub transitions: BTreeMap<String, Transition>,
}

/// All workflows by id.
#[derive(Debug, Clone)]
pub struct Workflows {
    by_id: BTreeMap<String, Workflow>,
}

impl Workflows {
    /// Parse workflow data (the format of `workflows.json`) and check it is consistent.
    pub fn from_json(data: &str) -> Result<Self> {
        let by_id: BTreeMap<String, Workflow> = serde_json::from_str(data)
            .map_err(|e| EngineError::Internal(format!("invalid workflow data: {e}")))?;
        for (id, wf) in &by_id {
            if !wf.states.contains_key(&wf.initial_state) {
                return Err(EngineError::Internal(format!(
                    "workflow {id}: unknown initial state"
                )));
            }
            for (sid, s) in &wf.states {
                for t in &s.transitions {
                    let tr = wf.transitions.get(t).ok_or_else(|| {
                        EngineError::Internal(format!(
                            "workflow {id}: state {sid} offers unknown {t}"
                        ))
                    })?;
                    if !wf.states.contains_key(&tr.new_state) {
                        return Err(EngineError::Internal(format!(
                            "workflow {id}: transition {t} leads to unknown state"
                        )));
                    }
                }
            }
        }
        Ok(Workflows { by_id })
    }

    /// The built-in workflows.
    pub fn builtin() -> Self {
        // Part of the binary and covered by tests; failing here is a build bug.
        Self::from_json(BUILTIN_WORKFLOWS)
            .unwrap_or_else(|e| panic!("built-in workflows.json: {e}"))
    }

    /// The workflow `id`.
    pub fn get(&self, id: &str) -> Option<&Workflow> {
        self.by_id.get(id)
    }

    /// Every workflow with its id, by id.
    pub fn all(&self) -> impl Iterator<Item = (&str, &Workflow)> {
        self.by_id.iter().map(|(id, w)| (id.as_str(), w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_publication_workflow_is_consistent() {
        let w = Workflows::builtin();
        let wf = w.get("simple_publication_workflow").unwrap();
        assert_eq!(wf.initial_state, "private");
        let published = &wf.states["published"];
        assert!(published.transitions.contains(&"retract".to_string()));
        assert!(published.permissions["View"].contains(&"Anonymous".to_string()));
        assert!(!wf.states["private"].permissions["View"].contains(&"Anonymous".to_string()));
    }
}
