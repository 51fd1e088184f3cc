//! What the migrations build, and what the schema itself refuses.

use cinder_attach::domain::attachment::{AttachStatus, AttachmentFilters, AttachmentSortKey};
use cinder_attach::domain::paging::{Page, SortDir, MAX_LIMIT};

fn of_project(project: Option<&str>) -> AttachmentFilters {
    AttachmentFilters {
        project_id: project.map(str::to_owned),
        ..Default::default()
    }
}

fn newest_first() -> Page<AttachmentSortKey> {
    Page {
        sort: vec![(AttachmentSortKey::CreatedAt, SortDir::Desc)],
        marker: None,
        limit: MAX_LIMIT,
        offset: 0,
    }
}

use crate::support::fixtures::{self, *};
use crate::support::TestApp;

async fn migrations_create_the_default_volume_type(app: TestApp) {
    let names = app
        .db
        .column("select name from volume_types where deleted = false")
        .await;
    assert_eq!(names, ["__DEFAULT__"]);
    let ids = app
        .db
        .column("select cast(id as text) from volume_types")
        .await;
    assert!(
        cinder_attach::domain::ids::parse_uuid_like(&ids[0]).is_some(),
        "default type id {:?} is a uuid",
        ids[0]
    );
}

async fn migrations_run_twice_without_harm(app: TestApp) {
    // A second start against a migrated database applies nothing and keeps the data.
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let again = app.db.store().await;
    let all = again
        .list_attachments(&of_project(None), &newest_first())
        .await
        .unwrap();
    assert_eq!(all.len(), 4);
}

async fn status_columns_refuse_unknown_values(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let bad_volume = format!("update volumes set status = 'bogus' where id = '{VOLUME_P1}'");
    assert!(app.db.execute(&bad_volume).await.is_err());
    let bad_attachment = format!(
        "update volume_attachment set attach_status = 'detaching' where id = '{ATTACHMENT_1}'"
    );
    assert!(
        app.db.execute(&bad_attachment).await.is_err(),
        "detaching is not an attachment status"
    );
    let bad_mode =
        format!("update volume_attachment set attach_mode = 'wo' where id = '{ATTACHMENT_1}'");
    assert!(app.db.execute(&bad_mode).await.is_err());
    let statuses = app
        .db
        .column(&format!(
            "select status from volumes where id = '{VOLUME_P1}'"
        ))
        .await;
    assert_eq!(statuses, ["in-use"], "refused updates changed nothing");
}

async fn live_type_names_are_unique(app: TestApp) {
    let duplicate = "insert into volume_types (id, name, created_at, deleted)
                     values ('99999999-9999-4999-8999-999999999999', '__DEFAULT__',
                             '2026-01-01T00:00:00+00:00', false)";
    assert!(app.db.execute(duplicate).await.is_err());
    // A soft-deleted type does not hold its name.
    app.db
        .execute("update volume_types set deleted = true where name = '__DEFAULT__'")
        .await
        .unwrap();
    app.db.execute(duplicate).await.unwrap();
}

async fn attachments_need_an_existing_volume(app: TestApp) {
    let orphan = format!(
        "insert into volume_attachment (id, volume_id, attach_status, created_at, deleted)
         values ('{ATTACHMENT_1}', '99999999-9999-4999-8999-999999999999', 'reserved',
                 '2026-01-01T00:00:00+00:00', false)"
    );
    assert!(app.db.execute(&orphan).await.is_err());
}

async fn listing_is_scoped_ordered_and_skips_deleted(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let p1 = app
        .store
        .list_attachments(&of_project(Some("p1")), &newest_first())
        .await
        .unwrap();
    let ids: Vec<String> = p1.iter().map(|a| a.id.to_string()).collect();
    assert_eq!(
        ids,
        [ATTACHMENT_3, ATTACHMENT_2, ATTACHMENT_1],
        "newest first"
    );
    let first = p1
        .iter()
        .find(|a| a.id.to_string() == ATTACHMENT_1)
        .unwrap();
    assert_eq!(first.attach_status, AttachStatus::Attached);
    assert_eq!(first.attach_mode.map(|m| m.as_str()), Some("rw"));
    assert_eq!(first.instance_uuid.as_deref(), Some(INSTANCE_1));
    assert_eq!(
        first.attach_time.map(|t| t.to_rfc3339()),
        Some("2026-01-02T03:04:05.123456+00:00".to_owned())
    );
    assert_eq!(
        first.connection_info.as_ref().unwrap()["driver_volume_type"],
        "local"
    );

    let p2 = app
        .store
        .list_attachments(&of_project(Some("p2")), &newest_first())
        .await
        .unwrap();
    assert_eq!(p2.len(), 1);
    let nobody = app
        .store
        .list_attachments(&of_project(Some("p3")), &newest_first())
        .await
        .unwrap();
    assert!(nobody.is_empty());
}

/// PostgreSQL's lock functions: 0010's gives the volume once and then its live
/// attachments; 0003's stays as it was, for processes of an earlier version that run
/// beside one that migrated (it must not be replaced or dropped while they may).
async fn both_lock_functions_answer_in_their_own_shape(app: TestApp) {
    if app.db.backend != crate::support::Backend::Postgres {
        return;
    }
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let call = |function: &str| {
        format!(
            "select coalesce(cast(id as text), '-') || ' ' || coalesce(cast(a_id as text), '-') \
               from {function}('{VOLUME_P1}', null, '<is> True', 'attach:max_attachments', \
                               'attach:single_writer')"
        )
    };
    let rows = app.db.column(&call("cinder_attach_lock_volume_rows")).await;
    assert_eq!(
        rows,
        [
            format!("{VOLUME_P1} -"),
            format!("- {ATTACHMENT_1}"),
            format!("- {ATTACHMENT_2}"),
            format!("- {ATTACHMENT_3}"),
        ]
    );
    let rows = app.db.column(&call("cinder_attach_lock_volume")).await;
    assert_eq!(
        rows,
        [
            format!("{VOLUME_P1} {ATTACHMENT_1}"),
            format!("{VOLUME_P1} {ATTACHMENT_2}"),
            format!("{VOLUME_P1} {ATTACHMENT_3}"),
        ]
    );
}

backend_tests!(
    both_lock_functions_answer_in_their_own_shape,
    migrations_create_the_default_volume_type,
    migrations_run_twice_without_harm,
    status_columns_refuse_unknown_values,
    live_type_names_are_unique,
    attachments_need_an_existing_volume,
    listing_is_scoped_ordered_and_skips_deleted,
);
