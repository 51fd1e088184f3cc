-- Events about volume types (`volume_type.*`, `volume_type_extra_specs.*`) concern no
-- volume: their `volume_id` is null (src/store/outbox/type_events.rs). A process of an
-- earlier version reads such a row as an error and leaves it pending, unsent and not
-- lost, until a relay of this version takes over.
alter table events alter column volume_id drop not null;
