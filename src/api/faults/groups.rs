//! How group and group type errors look on the wire: Cinder's statuses and texts.

use crate::api::error::ApiError;
use crate::domain::error::GroupError;

pub(super) fn fault(err: GroupError) -> ApiError {
    use GroupError as E;
    match err {
        E::TypeNotFound(id) => ApiError::NotFound(format!("Group type {id} could not be found.")),
        E::NoDefaultType => ApiError::NotFound("Default group type can not be found.".into()),
        E::TypeExists(name) => ApiError::Conflict(format!("Group Type {name} already exists.")),
        E::SpecNotShown { type_id, key } => ApiError::NotFound(format!(
            "Group Type {type_id} has no extra spec with key {key}."
        )),
        E::SpecNotFound { type_id, key } => {
            ApiError::NotFound(format!("Group Type {type_id} has no specs with key {key}."))
        }
        E::InvalidTypeUpdate(why) => ApiError::BadRequest(why.to_owned()),
        E::SpecBodyMismatch => ApiError::BadRequest("Request body and URI mismatch".into()),
    }
}
