-- The evolver child of an `evolve_core` run works in the run's worktree,
-- not in its parent's workspace: the run id (NULL for every other child).
-- Written once with the lineage, never changed.
ALTER TABLE session_lineage ADD COLUMN workspace_run TEXT;
