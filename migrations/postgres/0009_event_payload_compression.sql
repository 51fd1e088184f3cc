-- An event's payload lists every live attachment of its volume: on a volume shared by 16
-- hosts it is about 6 KB, by 64 about 22 KB, past the 2 KB from which PostgreSQL
-- compresses a value. lz4 compresses for far less CPU than the default pglz; the row
-- lock of a shared volume is held while the payloads are written, so that CPU is paid
-- one transaction after another (issue 27: shared mode at 64 clients 211 / 213 -> 233 /
-- 238 attach cycles/s, PostgreSQL's CPU per cycle 4.0 -> 3.5-3.6 ms). Values already
-- stored keep their compression. A server built without lz4 keeps pglz.
do $$
begin
    alter table events alter column payload set compression lz4;
exception when feature_not_supported then
    raise notice 'lz4 is not available: event payloads stay compressed with pglz';
end
$$;
