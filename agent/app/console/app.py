"""The console's ASGI app: pages over `ConsoleData`, forms that POST back, no logic of its own.

    app = create_app(data, token=None)      # served by `agent.app.console.serve`

Routes: /lessons (table, filters, recall search), /lessons/{id} (detail, edit, approve,
deprecate, restore), /review, /merges, /merges/{id} (undo), /runs, /runs/{id}, /health. Every POST
answers with a 303 redirect (so a reload does not resend it) or an error page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from agent.app.console.data import HYGIENE_WAIT_S, ConsoleData, form_text
from agent.app.console.models import Decision
from agent.app.console.security import CSRF_FIELD, GuardMiddleware, csrf_guard, new_csrf_token
from memory import LessonFilter, LessonNotFoundError, MemoryUsageError
from memory.types import STATUSES, LessonSort

PAGE_SIZE = 50
SORTS: tuple[LessonSort, ...] = ("created_at", "updated_at", "seen", "recalled", "helped", "misled")
_HERE = Path(str(files("agent.app.console")))
Endpoint = Callable[[Request], Awaitable[Response]]

# The edit form, in reading order (what `Memory.update` may change).
FORM_FIELDS = ("symptom", "root_cause", "fix", "applies_when", "scope", "error_type")


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else "-"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name, "")
    try:
        return max(0, int(raw)) if raw else default
    except ValueError as exc:
        raise HTTPException(400, f"{name} must be a whole number, not {raw!r}") from exc


def _choice(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = request.query_params.get(name) or None
    if value is not None and value not in allowed:
        raise HTTPException(400, f"{name} must be one of {', '.join(allowed)}")
    return value


class Pages:
    """The endpoints, bound to one store and one template set."""

    def __init__(self, data: ConsoleData, templates: Jinja2Templates, csrf: str) -> None:
        self.data = data
        self.templates = templates
        self.csrf = csrf

    def render(self, request: Request, name: str, code: int = 200, **context: Any) -> Response:
        context.update(
            csrf=self.csrf, csrf_field=CSRF_FIELD, notice=request.query_params.get("done")
        )
        return self.templates.TemplateResponse(request, name, context, status_code=code)

    async def lessons(self, request: Request) -> Response:
        facets = await run_in_threadpool(self.data.facets)
        scope = request.query_params.get("scope") or None
        error_type = request.query_params.get("error_type") or None
        status = _choice(request, "status", STATUSES)
        text = request.query_params.get("q", "").strip()
        if text:
            search_scope = scope or ("default" if "default" in facets.scopes else None)
            search_scope = search_scope or (facets.scopes[0] if facets.scopes else "default")
            cut = request.query_params.get("min_similarity") or None
            try:
                min_sim = float(cut) if cut is not None else None
            except ValueError as exc:
                raise HTTPException(400, "min_similarity must be a number") from exc
            result = await run_in_threadpool(
                lambda: self.data.search(
                    text, scope=search_scope, error_type=error_type, min_similarity=min_sim
                )
            )
            return self.render(request, "search.html", facets=facets, result=result, q=text)
        sort = _choice(request, "sort", SORTS) or "created_at"
        descending = request.query_params.get("order", "desc") != "asc"
        page_no = max(1, _int(request, "page", 1))
        where = LessonFilter(
            scope=scope,
            error_type=error_type,
            status=(status,) if status else (),
            sort=sort,
            descending=descending,
            offset=(page_no - 1) * PAGE_SIZE,
            limit=PAGE_SIZE,
        )
        page = await run_in_threadpool(lambda: self.data.lessons(where))
        keep = {k: v for k, v in request.query_params.items() if k != "page" and v}
        pages = max(1, -(-page.total // PAGE_SIZE))
        return self.render(
            request,
            "lessons.html",
            facets=facets,
            page=page,
            page_no=page_no,
            pages=pages,
            link=lambda n: "/lessons?" + urlencode({**keep, "page": n}),
            filters=keep,
        )

    async def lesson(self, request: Request) -> Response:
        lesson_id = request.path_params["lesson_id"]
        detail = await run_in_threadpool(lambda: self.data.lesson(lesson_id))
        return self.render(request, "lesson.html", d=detail, editable=FORM_FIELDS)

    async def edit(self, request: Request) -> Response:
        lesson_id = request.path_params["lesson_id"]
        form = await request.form()
        fields = {k: form_text(str(form[k])) for k in FORM_FIELDS if k in form}
        await run_in_threadpool(lambda: self.data.edit(lesson_id, fields, _client(request)))
        return RedirectResponse(f"/lessons/{lesson_id}?done=saved", status_code=303)

    def decide(self, decision: Decision, back: str) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            lesson_id = request.path_params["lesson_id"]
            await run_in_threadpool(
                lambda: self.data.set_status(lesson_id, decision, _client(request))
            )
            target = f"/lessons/{lesson_id}" if back == "lesson" else "/review"
            return RedirectResponse(f"{target}?done={decision}:{lesson_id}", status_code=303)

        return endpoint

    async def review(self, request: Request) -> Response:
        queue = await run_in_threadpool(self.data.review)
        return self.render(request, "review.html", queue=queue)

    async def refresh_review(self, request: Request) -> Response:
        validated, flagged, decayed = await run_in_threadpool(self.data.refresh_review)
        done = f"lift applied: {validated} validated, {flagged} flagged, {decayed} decayed"
        return RedirectResponse("/review?" + urlencode({"done": done}), status_code=303)

    async def merges(self, request: Request) -> Response:
        history = await run_in_threadpool(self.data.merges)
        return self.render(request, "merges.html", merges=history)

    async def merge(self, request: Request) -> Response:
        merge_id = request.path_params["merge_id"]
        detail = await run_in_threadpool(lambda: self.data.merge(merge_id))
        return self.render(request, "merge.html", m=detail)

    async def undo(self, request: Request) -> Response:
        merge_id = request.path_params["merge_id"]
        await run_in_threadpool(lambda: self.data.undo(merge_id, _client(request)))
        return RedirectResponse(f"/merges/{merge_id}?done=undone", status_code=303)

    async def runs(self, request: Request) -> Response:
        page_no = max(1, _int(request, "page", 1))
        offset = (page_no - 1) * PAGE_SIZE
        page = await run_in_threadpool(lambda: self.data.runs(offset=offset, limit=PAGE_SIZE))
        pages = max(1, -(-page.total // PAGE_SIZE))
        return self.render(request, "runs.html", page=page, page_no=page_no, pages=pages)

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        detail = await run_in_threadpool(lambda: self.data.run(run_id))
        return self.render(request, "run.html", r=detail)

    async def health(self, request: Request) -> Response:
        health = await run_in_threadpool(self.data.health)
        return self.render(request, "health.html", h=health)

    async def recompute(self, request: Request) -> Response:
        await run_in_threadpool(lambda: self.data.recompute_hygiene(wait_s=HYGIENE_WAIT_S))
        return RedirectResponse("/health", status_code=303)

    async def learning_png(self, request: Request) -> Response:
        png = await run_in_threadpool(self.data.learning_png)
        if png is None:
            raise HTTPException(404, "no learning-curve plot under the results directory")
        return FileResponse(png, media_type="image/png")

    async def not_found(self, request: Request, exc: Exception) -> Response:
        return self.render(request, "error.html", 404, message=str(exc), status=404)

    async def refused(self, request: Request, exc: Exception) -> Response:
        return self.render(request, "error.html", 409, message=str(exc), status=409)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return self.render(
            request, "error.html", exc.status_code, message=exc.detail, status=exc.status_code
        )


def create_app(data: ConsoleData, *, token: str | None, csrf: str | None = None) -> Starlette:
    """The console app over `data`; `token` (if any) is required on every request."""
    csrf = csrf or new_csrf_token()
    # Lesson texts are model output and log excerpts: escape everything, in every template.
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_HERE / "templates")), autoescape=True
    )
    env.filters.update(when=_when, num=_num)
    templates = Jinja2Templates(env=env)
    pages = Pages(data, templates, csrf)

    async def home(request: Request) -> Response:
        return RedirectResponse("/lessons", status_code=303)

    def post(path: str, handler: Endpoint) -> Route:
        return Route(path, csrf_guard(handler, csrf), methods=["POST"])

    routes = [
        Route("/", home),
        Route("/lessons", pages.lessons),
        Route("/lessons/{lesson_id}", pages.lesson),
        post("/lessons/{lesson_id}/edit", pages.edit),
        post("/lessons/{lesson_id}/approve", pages.decide("approve", "lesson")),
        post("/lessons/{lesson_id}/deprecate", pages.decide("deprecate", "lesson")),
        post("/lessons/{lesson_id}/restore", pages.decide("restore", "lesson")),
        post("/review/refresh", pages.refresh_review),
        post("/review/{lesson_id}/keep", pages.decide("keep", "review")),
        post("/review/{lesson_id}/approve", pages.decide("approve", "review")),
        post("/review/{lesson_id}/deprecate", pages.decide("deprecate", "review")),
        post("/review/{lesson_id}/restore", pages.decide("restore", "review")),
        Route("/review", pages.review),
        Route("/merges", pages.merges),
        Route("/merges/{merge_id}", pages.merge),
        post("/merges/{merge_id}/undo", pages.undo),
        Route("/runs", pages.runs),
        Route("/runs/{run_id}", pages.run),
        Route("/health", pages.health),
        Route("/health/learning.png", pages.learning_png),
        post("/health/recompute", pages.recompute),
        Mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(GuardMiddleware, token=token)],
        exception_handlers={
            LessonNotFoundError: pages.not_found,
            MemoryUsageError: pages.refused,
            HTTPException: pages.http_error,
        },
    )
    app.state.results_dir = data.results_dir
    return app
