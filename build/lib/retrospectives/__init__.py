"""After a task: turn what happened into typed lessons; periodically consolidate them."""
