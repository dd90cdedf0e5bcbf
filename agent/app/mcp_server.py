"""`lessonloop mcp`: the memory's tools over the Model Context Protocol (official `mcp` SDK).

`build_server(LessonTools(memory))` registers the tools of agent/app/mcp_tools.py with typed input
schemas and a resource per scope; `serve(...)` runs it over stdio (what desktop assistants
launch) or streamable HTTP. Over HTTP the server listens on a loopback address only, unless a
token is set: then every request must carry `Authorization: Bearer TOKEN`.

Errors a caller can act on (unknown id, refused change, a store that is away) come back as MCP
tool errors carrying the message; anything else is a bug, logged with its traceback on
stderr while the caller sees only that the tool failed.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from agent.app.mcp_tools import (
    DeprecateAnswer,
    LessonDetail,
    LessonTools,
    OutcomeAnswer,
    RecallAnswer,
    RecordAnswer,
    RunAnswer,
    SearchAnswer,
)
from agent.errors import ConfigurationError, ToolCallError
from memory import IndexBehindError, LessonMemoryError, MemoryBackendError, MemoryConfigError
from memory.types import ERROR_TYPE_MAX_CHARS, SCOPE_MAX_CHARS

Transport = Literal["stdio", "http"]

INSTRUCTIONS = """\
lessonloop remembers lessons from earlier tasks: error type, symptom, root cause, fix.
Before a task, call recall_lessons with the task's description and your scope (a project or
user name); after an error, call it again with the error text and error_type. Paste the
returned block into your reasoning: it is past experience that may not apply.
When you fixed a failure and know why, call record_lesson (only fixes you verified).
To let the memory learn which lessons help: start_run at the start of a task, pass its
run_id to recall_lessons and record_lesson, and call report_outcome once at the end."""

# Below this no lesson's block fits (its header and labels alone take about 40 tokens): the
# answer would be "nothing close enough" whatever the store holds.
MIN_TOKEN_BUDGET = 64
NOT_BLANK = r"\S"  # a JSON-schema pattern matches anywhere: some character that is not space
Scope = Annotated[
    str,
    Field(
        min_length=1,
        max_length=SCOPE_MAX_CHARS,
        pattern=NOT_BLANK,
        description="Namespace of the lessons (a project or user); recall never crosses it.",
    ),
]
ErrorType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=ERROR_TYPE_MAX_CHARS,
        pattern=NOT_BLANK,
        description="Error class or kind, e.g. ValueError, KeyError, check_failed, timeout.",
    ),
]
Text = Annotated[str, Field(min_length=1, max_length=20_000, pattern=NOT_BLANK)]
RunId = Annotated[
    str | None,
    Field(description="A run id from start_run, of this scope (records what the run was given)."),
]
LessonId = Annotated[str, Field(min_length=1, max_length=64, description="e.g. les_1f0c2a9b3d4e")]


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Memory and tool-call errors become MCP tool errors whose message says what to do."""
    try:
        yield
    except (ToolCallError, LessonMemoryError) as exc:
        if isinstance(exc, IndexBehindError):  # stored: a retry would write it twice
            raise ToolError(f"stored, but the lesson store is behind: {exc}") from exc
        if isinstance(exc, MemoryBackendError | MemoryConfigError):
            raise ToolError(f"the lesson store failed: {exc} (retry later)") from exc
        raise ToolError(str(exc)) from exc


def _recall_result(answer: RecallAnswer) -> CallToolResult:
    # The block is what a model pastes into its reasoning: it is the text; the ids and
    # scores travel as structured content.
    if answer.block:
        text = f"{answer.block}\n\nlesson ids: {', '.join(answer.lesson_ids)}"
    else:
        text = "No stored lesson is close enough to this; nothing to apply."
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=answer.model_dump(mode="json"),
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lessonloop")
    except PackageNotFoundError:  # a source checkout that was never installed
        return ""


def build_server(tools: LessonTools) -> MCPServer:
    """An `MCPServer` whose tools call `tools`; no transport yet."""
    server: MCPServer = MCPServer(
        "lessonloop", version=_version(), instructions=INSTRUCTIONS, log_level="INFO"
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    # With a run_id, recall records what the run was given (counted once per lesson).
    @server.tool(
        annotations=ToolAnnotations(
            destructive_hint=False, idempotent_hint=True, open_world_hint=False
        )
    )
    def recall_lessons(
        text: Annotated[
            str,
            Field(min_length=1, max_length=20_000, description="The task or the error output."),
        ],
        scope: Scope,
        error_type: Annotated[
            str | None,
            Field(description="The error's type: answers only if lessons of it are known."),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most lessons returned.")] = 3,
        token_budget: Annotated[
            int,
            Field(
                ge=MIN_TOKEN_BUDGET,
                le=100_000,
                description="Most tokens the block may take (one lesson's block needs ~40).",
            ),
        ] = 300,
        include_global: Annotated[
            bool, Field(description="Also recall lessons of the shared 'global' scope.")
        ] = False,
        run_id: RunId = None,
        exclude: Annotated[
            list[LessonId] | None,
            Field(
                max_length=200,
                description="Lesson ids not to give again (they did not help): the next "
                "lessons take their place. Count them against the lessons with report_outcome's "
                "misled_ids.",
            ),
        ] = None,
        data: Annotated[
            list[Annotated[str, Field(max_length=20_000)]] | None,
            Field(
                max_length=50,
                description="The task's input as the program reads it (e.g. each file's first "
                "lines): lessons about data symbols it lacks ('$', a BOM, ';') stay out.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, RecallAnswer]:
        """Lessons from past tasks that match this task or error, as a block for a prompt."""
        with _tool_errors():
            answer = tools.recall_lessons(
                text,
                scope,
                error_type=error_type,
                limit=limit,
                token_budget=token_budget,
                include_global=include_global,
                run_id=run_id,
                exclude=exclude or (),
                data=data or (),
            )
        return _recall_result(answer)

    @server.tool(annotations=read_only)
    def search_lessons(
        scope: Scope,
        text: Annotated[
            str | None,
            Field(max_length=20_000, description="Search by meaning; omit to list by helped."),
        ] = None,
        error_type: Annotated[str | None, Field(description="Only this error type.")] = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        offset: Annotated[int, Field(ge=0)] = 0,
        include_global: bool = False,
    ) -> SearchAnswer:
        """Find a scope's lessons by meaning, or list its active lessons (most helpful first)."""
        with _tool_errors():
            return tools.search_lessons(
                scope,
                text=text,
                error_type=error_type,
                limit=limit,
                offset=offset,
                include_global=include_global,
            )

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    def record_lesson(
        scope: Scope,
        error_type: ErrorType,
        symptom: Annotated[Text, Field(description="What failed")],
        root_cause: Annotated[Text, Field(description="Why it failed")],
        fix: Annotated[Text, Field(description="The change that fixed it")],
        applies_when: Annotated[
            str, Field(max_length=20_000, description="When the lesson applies")
        ] = "",
        evidence: Annotated[
            str, Field(max_length=20_000, description="A short log excerpt that shows it")
        ] = "",
        run_id: RunId = None,
    ) -> RecordAnswer:
        """Store a verified lesson: secrets are masked; a duplicate is folded into the lesson
        it repeats; a lesson that only restates one recalled into the same run is refused."""
        with _tool_errors():
            return tools.record_lesson(
                scope,
                error_type,
                symptom,
                root_cause,
                fix,
                applies_when=applies_when,
                evidence=evidence,
                run_id=run_id,
            )

    @server.tool()
    def start_run(
        scope: Scope,
        goal: Annotated[str, Field(max_length=20_000, description="The task, in a line")] = "",
        task_id: Annotated[str, Field(max_length=200)] = "",
    ) -> RunAnswer:
        """Open a run (one attempt at one task) so the memory can learn which lessons help."""
        with _tool_errors():
            return tools.start_run(scope, goal=goal, task_id=task_id)

    @server.tool()
    def report_outcome(
        run_id: Annotated[str, Field(min_length=1, description="The id start_run returned")],
        lesson_ids: Annotated[
            list[str],
            Field(max_length=200, description="Lessons you used (recalled ones count already)"),
        ],
        passed: Annotated[bool, Field(description="Whether the task finally succeeded")],
        misled_ids: Annotated[
            list[LessonId] | None,
            Field(
                max_length=200,
                description="Lessons given to this run that made it worse: misled even if "
                "it passed",
            ),
        ] = None,
    ) -> OutcomeAnswer:
        """Close a run once: its lessons are counted as helped (passed) or misled (failed;
        and misled_ids whatever the outcome)."""
        with _tool_errors():
            return tools.report_outcome(run_id, lesson_ids, passed, misled_ids=misled_ids or ())

    @server.tool(annotations=read_only)
    def get_lesson(lesson_id: LessonId) -> LessonDetail:
        """One lesson in full: texts, evidence, merge links, uses and lift."""
        with _tool_errors():
            return tools.get_lesson(lesson_id)

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False))
    def deprecate_lesson(
        lesson_id: LessonId,
        reason: Annotated[str, Field(min_length=1, max_length=2000, description="Why")],
    ) -> DeprecateAnswer:
        """Retire a wrong or harmful lesson: it is never recalled again."""
        with _tool_errors():
            return tools.deprecate_lesson(lesson_id, reason)

    @server.resource(
        "lessonloop://scopes/{scope}/top",
        name="top_lessons",
        description="The most helpful active lessons of a scope, rendered for a prompt.",
        mime_type="text/plain",
    )
    def top_lessons(scope: str) -> str:
        try:
            return tools.top_lessons(scope)
        except LessonMemoryError as exc:
            raise ResourceError(f"the lesson store failed: {exc}") from exc

    return server


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token (anyone could read the lessons)."""
    if token:
        return
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigurationError(
            f"refusing to serve on {host}: not a loopback address; set a token "
            "(--token or LESSONLOOP_MCP_TOKEN) so that every request must carry it"
        )


ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class BearerToken:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get a 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong token\n"})
                return
        await self.app(scope, receive, send)


def serve(
    tools: LessonTools,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    on_listen: Callable[[str], None] | None = None,
) -> None:
    """Serve until stdin closes (stdio) or the process is interrupted (http).

    Over HTTP, `port=0` takes a free port; `on_listen` gets the endpoint URL once it accepts.
    """
    server = build_server(tools)
    if transport == "stdio":
        server.run("stdio")
        return
    check_bind(host, token)
    import anyio
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if token:
        app = BearerToken(app, token)
    http = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))

    async def run() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(http.serve)
            while not http.started:
                await anyio.sleep(0.05)
            bound = http.servers[0].sockets[0].getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            if on_listen is not None:
                on_listen(f"http://{shown}:{bound}/mcp")

    anyio.run(run)
