-- PostgreSQL compresses event payloads with lz4 from here on (see its 0009). SQLite does
-- not compress values: nothing to change, the number is kept so both stores' migrations
-- stay in step.
select 1;
