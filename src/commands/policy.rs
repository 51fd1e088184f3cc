//! `cinder-attach policy`: the effective rules, the policy file laid over the defaults.

use super::StartError;
use crate::cli::PolicyArgs;
use crate::policy::PolicyEngine;

pub fn print_policy(args: &PolicyArgs) -> Result<(), StartError> {
    let policy = PolicyEngine::load(args.policy_file.clone()).map_err(StartError::Policy)?;
    print!("{}", policy.current().render());
    Ok(())
}
