-- The events a transaction records at one point share one payload, stored in the last of
-- them; the others keep it null and read it from that one (src/store/outbox.rs). On a
-- volume shared by 64 hosts a payload is about 16 KB, and a cycle stored six where four
-- differ. A process of an earlier version still relaying beside one that applied this
-- refuses the null payloads (it cannot read them) and leaves them pending, unsent and
-- not lost, until a relay of this version takes over.
alter table events alter column payload drop not null;
