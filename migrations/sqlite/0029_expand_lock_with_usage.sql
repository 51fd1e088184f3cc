-- PostgreSQL's 0029 adds the lock function that also reads what an attachment write's
-- events payload shows. SQLite has no functions: the store reads the same columns with
-- plain statements (src/store/locks.rs), and its schema does not change. This step keeps
-- the two folders numbered alike.
select 1;
