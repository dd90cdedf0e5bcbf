"""`lessonloop serve`: the lesson console, a local web app over the same store as the CLI.

`data` is the only module that touches the store; `app` turns its views into pages;
`security` guards access (token, loopback Host, CSRF); `serve` runs it under uvicorn.
"""
