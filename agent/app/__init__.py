"""The application layer: the one place that wires `agent`, `memory` and `retrospectives`.

The CLI (`cli*.py`), the settings read at the edge (`settings.py`), the session that carries a
run through memory and the retrospective (`session.py`), the report, the doctor, the demo, the
web console (`console/`) and the MCP server (`mcp_*.py`). Nothing outside this package imports
it (tests/test_import_rules.py), so the library stays usable without the application.
"""
