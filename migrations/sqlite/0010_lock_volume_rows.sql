-- PostgreSQL's 0010 adds a second lock function; SQLite has none (it locks and reads in
-- two statements): nothing to change, the number is kept so both stores' migrations stay
-- in step.
select 1;
