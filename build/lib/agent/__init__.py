"""lessonloop's agent: the bounded generate -> check -> reflect -> refine loop."""
