-- PostgreSQL's 0010 changes the rows of its lock function; SQLite has no such function
-- (it locks and reads in two statements): nothing to change, the number is kept so both
-- stores' migrations stay in step.
select 1;
