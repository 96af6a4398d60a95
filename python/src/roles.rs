//! The roles of an `enterprise` run, for the PettingZoo env: each role's name, action
//! count and view, the joint action of one index per role, and the rewards per role.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use perennial::morpheus::roles::{EnterpriseEnv, Observe};

use crate::guarded;
use crate::run::Run;

/// The roles world behind a run, or an error saying which worlds have roles.
fn enterprise(run: &Run) -> PyResult<&EnterpriseEnv> {
    run.inner
        .world()
        .world_any()
        .downcast_ref::<EnterpriseEnv>()
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{} is a world of kind \"{}\", which has one agent; several agents need a world of kind \"enterprise\" with a [roles] table, such as perennial/Enterprise-v0",
                run.inner.file().path.display(),
                run.inner.file().kind()
            ))
        })
}

/// One role as Python reads it: (name, action count, indices of the state it sees).
type RoleInfo = (String, usize, Vec<usize>);

/// The roles of `run`'s world, in the order their operations apply: a list of `(name,
/// actions, seen)`, where `actions` is the size of the role's `Discrete` space and `seen`
/// the indices of the full observation it observes (as its role says, or as `observe`,
/// "own" or "full", says for every role), and the roles' `alpha`.
#[pyfunction]
#[pyo3(signature = (run, observe = None))]
pub fn roles(run: PyRef<'_, Run>, observe: Option<&str>) -> PyResult<(Vec<RoleInfo>, f64)> {
    guarded(|| {
        let env = enterprise(&run)?;
        let observe = match observe {
            None => None,
            Some("own") => Some(Observe::Own),
            Some("full") => Some(Observe::Full),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "observe={other:?}: use \"own\" (each role its view), \"full\" (every role the whole state) or None (as the world file says)"
                )));
            }
        };
        let table = env.roles();
        let mut out = Vec::with_capacity(table.roles.len());
        for (r, (role, layout)) in table.roles.iter().zip(env.layouts()).enumerate() {
            let seen = env.seen(r, observe).unwrap_or_default();
            out.push((role.name.clone(), layout.actions, seen));
        }
        Ok((out, table.alpha))
    })
}

/// The joint action of one index per role, in role order. Raises `ValueError` naming the
/// role whose index is outside its table.
#[pyfunction]
pub fn joint_action(run: PyRef<'_, Run>, per_role: Vec<usize>) -> PyResult<usize> {
    guarded(|| {
        let env = enterprise(&run)?;
        if let Some(j) = env.joint(&per_role) {
            return Ok(j);
        }
        let table = env.roles();
        if per_role.len() != table.roles.len() {
            return Err(PyValueError::new_err(format!(
                "{} actions for {} roles ({}); give one per role",
                per_role.len(),
                table.roles.len(),
                table.names().join(", ")
            )));
        }
        let (role, (i, n)) = table
            .roles
            .iter()
            .zip(per_role.iter().zip(env.layouts().iter().map(|l| l.actions)))
            .find(|(_, (i, n))| *i >= n)
            .map(|(role, (i, n))| (role.name.as_str(), (*i, n)))
            .unwrap_or(("?", (0, 0)));
        Err(PyValueError::new_err(format!(
            "action {i} of role `{role}` is outside its space Discrete({n})"
        )))
    })
}

/// The last step's rewards per role, in role order: `(own, learning)`, each role's own
/// reward (the team reward's terms it owns) and what its agent learns from (the roles'
/// `alpha` mix of the team reward `team` and its own).
#[pyfunction]
pub fn role_rewards(run: PyRef<'_, Run>, team: f64) -> PyResult<(Vec<f64>, Vec<f64>)> {
    guarded(|| {
        let env = enterprise(&run)?;
        Ok((env.role_rewards().to_vec(), env.learning_rewards(team)))
    })
}
