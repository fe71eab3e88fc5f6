"""How real OpenAI-compatible servers answer, request for request, for the fake server's `profile`.

Each profile says what a server refuses (status and body as that server words them), what its model
can reply (a server whose chat template has no tools can only answer text) and how it streams.

- `openai` (the default): lenient, like the OpenAI API for well-formed requests.
- `strict-openai`: the OpenAI API's own request checks: unknown parameters, tool messages that
  answer no call, calls left unanswered and non-strict JSON schemas get HTTP 400; stream usage
  only when `stream_options.include_usage` asks for it (a last chunk with no choices).
- `llama-cpp-chatml`: llama-cpp-python 0.3.36's server with `--chat_format chatml-function-calling`,
  as measured: its request model (pydantic, union of message types) answers HTTP 500 with the
  validation error's text for an assistant `content: null` and for a `json_schema` response
  format; `tool_choice` other than "auto"/"none" trips an `assert` (HTTP 500, empty message);
  `max_completion_tokens` is ignored (only `max_tokens` limits a reply); streams carry no usage;
  one request at a time.
- `llama-cpp-template`: the same server with the model's own chat template (SmolLM2's has no
  tools): the same validation, `tool_choice: "required"` ignored, tools never called unless
  `tool_choice` names one; a reply the script makes a tool call comes back as text.
- `ollama`: Ollama's `/v1`: accepts nulls and JSON-schema formats, ignores `tool_choice`,
  may end a tool-call reply with `finish_reason: "stop"` (as some versions do; the profile always
  does, the harder case), streams usage only when asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from reme.jsontypes import JSONObject, JSONValue

PROFILES = ("openai", "strict-openai", "llama-cpp-chatml", "llama-cpp-template", "ollama")

# Parameters the chat-completions API knows; anything else gets HTTP 400 from strict OpenAI.
OPENAI_PARAMETERS = frozenset(
    {
        "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias",
        "logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "n",
        "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key", "reasoning_effort",
        "response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
        "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user",
        "verbosity", "web_search_options",
    }
)  # fmt: skip
LLAMA_MESSAGE_TYPES = (
    ("ChatCompletionRequestSystemMessage", "system"),
    ("ChatCompletionRequestUserMessage", "user"),
    ("ChatCompletionRequestAssistantMessage", "assistant"),
    ("ChatCompletionRequestUserMessage", "user"),
    ("ChatCompletionRequestToolMessage", "tool"),
    ("ChatCompletionRequestFunctionMessage", "function"),
)

Refusal = tuple[int, JSONObject]
Body = Mapping[str, JSONValue]  # a request body as the server parsed it


def obj(value: JSONValue | object) -> JSONObject:
    """`value` when it is a JSON object, else empty: a fake server reads what it can."""
    return value if isinstance(value, dict) else {}


def items(value: JSONValue | object) -> list[JSONValue]:
    """`value` when it is a JSON list, else empty."""
    return value if isinstance(value, list) else []


def _error(message: str, kind: str, **extra: JSONValue) -> JSONObject:
    return {"error": {"message": message, "type": kind, "param": None, "code": None, **extra}}


@dataclass(frozen=True)
class Profile:
    name: str = "openai"

    @property
    def serial(self) -> bool:
        """Answers one request at a time (llama-cpp-python's server holds a lock around its model)."""
        return self.name.startswith("llama-cpp")

    def refusal(self, body: Body) -> Refusal | None:
        if self.name == "strict-openai":
            return _strict_openai(body)
        if self.name.startswith("llama-cpp"):
            return _llama_cpp(body, chatml=self.name == "llama-cpp-chatml")
        if self.name == "ollama" and not isinstance(body.get("messages"), list):
            return 400, _error("invalid message format", "invalid_request_error")
        return None

    def entry(self, entry: JSONObject, body: Body) -> JSONObject:
        """What this server's model can reply for a scripted entry."""
        if self.name != "llama-cpp-template":
            return entry
        forced = body.get("tool_choice")
        if isinstance(forced, dict) and "tool" in entry:
            return entry  # a named tool choice makes the server constrain the reply to that call
        if "tool" in entry or "tools" in entry:
            calls = items(entry.get("tools")) or [{"tool": entry["tool"], "args": entry.get("args") or {}}]
            text = "\n".join(
                json.dumps({"name": obj(c)["tool"], "arguments": obj(c).get("args") or {}}) for c in calls
            )
            return {"text": text}
        if "output" in entry and "text" not in entry:
            return {"text": json.dumps(entry["output"])}
        return entry

    def max_tokens(self, body: Body) -> int | None:
        """The output limit this server applies (llama-cpp-python reads only `max_tokens`)."""
        keys = (
            ("max_tokens",) if self.name.startswith("llama-cpp") else ("max_completion_tokens", "max_tokens")
        )
        for key in keys:
            value = body.get(key)
            if isinstance(value, int):
                return value
        return None

    def stream_usage(self, body: Body) -> bool:
        if self.name.startswith("llama-cpp"):
            return False
        if self.name in ("strict-openai", "ollama"):
            return bool(obj(body.get("stream_options")).get("include_usage"))
        return True

    def tool_finish_reason(self) -> str:
        return "stop" if self.name == "ollama" else "tool_calls"


def profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown server profile {name!r}; use one of {', '.join(PROFILES)}")
    return Profile(name)


def _strict_openai(body: Body) -> Refusal | None:
    unknown = sorted(set(body) - OPENAI_PARAMETERS)
    if unknown:
        return 400, _error(f"Unrecognized request argument supplied: {unknown[0]}", "invalid_request_error")
    open_calls: set[str] = set()
    for i, value in enumerate(items(body.get("messages"))):
        message = obj(value)
        role = message.get("role")
        if open_calls and role != "tool":
            ids = ", ".join(sorted(open_calls))
            return 400, _error(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                f"each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}",
                "invalid_request_error",
                param=f"messages.[{i}].role",
            )
        if role == "assistant":
            open_calls = {str(obj(c).get("id", "")) for c in items(message.get("tool_calls"))}
        elif role == "tool":
            if message.get("tool_call_id") not in open_calls:
                return 400, _error(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.",
                    "invalid_request_error",
                    param=f"messages.[{i}].role",
                )
            open_calls.discard(str(message["tool_call_id"]))
    response_format = obj(body.get("response_format"))
    if response_format.get("type") == "json_schema":
        spec = obj(response_format.get("json_schema"))
        problem = _not_strict(obj(spec.get("schema"))) if spec.get("strict") else None
        if problem:
            return 400, _error(
                f"Invalid schema for response_format '{spec.get('name', '')}': {problem}",
                "invalid_request_error",
                param="response_format",
            )
    return None


def _not_strict(schema: JSONValue, where: str = "context=()") -> str | None:
    """Why a schema cannot be used with `strict: true` (objects closed, every property required)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        properties = obj(schema.get("properties"))
        if schema.get("additionalProperties") is not False:
            return f"In {where}, 'additionalProperties' is required to be supplied and to be false."
        missing = sorted(set(properties) - {str(key) for key in items(schema.get("required"))})
        if missing:
            return f"In {where}, 'required' is required to include every key in properties. Missing '{missing[0]}'."
    children = [*obj(schema.get("properties")).values(), *obj(schema.get("$defs")).values()]
    for key in ("items", "anyOf", "allOf"):
        value = schema.get(key)
        children.extend(value if isinstance(value, list) else [value] if isinstance(value, dict) else [])
    for child in children:
        problem = _not_strict(child, where)
        if problem:
            return problem
    return None


def _llama_cpp(body: Body, *, chatml: bool) -> Refusal | None:
    errors: list[dict[str, object]] = []
    for i, message in enumerate(items(body.get("messages"))):
        errors.extend(_llama_message_errors(i, message))
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") not in (None, "text", "json_object"):
        errors.append(
            {
                "type": "literal_error",
                "loc": ("body", "response_format", "type"),
                "msg": "Input should be 'text' or 'json_object'",
                "input": response_format.get("type"),
                "ctx": {"expected": "'text' or 'json_object'"},
            }
        )
    if errors:
        # FastAPI's RequestValidationError, which the server's error handler answers as a 500 with str(exc)
        lines = [f"{len(errors)} validation error{'s' if len(errors) != 1 else ''}:"] + [
            f"  {e!r}" for e in errors
        ]
        return 500, _error("\n".join(lines), "internal_server_error")
    choice = body.get("tool_choice")
    if chatml and body.get("tools") and isinstance(choice, str) and choice not in ("auto", "none"):
        return 500, _error("", "internal_server_error")  # `assert tool_choice == "auto"` has no message
    return None


def _llama_message_errors(i: int, message: JSONValue) -> list[dict[str, object]]:
    """One error per member of the message union that does not match, as pydantic lists them."""
    if not isinstance(message, dict):
        return [
            {"type": "dict_type", "loc": ("body", "messages", i), "msg": "Input should be a valid dictionary"}
        ]
    role = message.get("role")
    if role != "assistant" or "content" not in message or isinstance(message["content"], str):
        return []
    errors: list[dict[str, object]] = []
    for name, expected in LLAMA_MESSAGE_TYPES:
        loc = ("body", "messages", i, name)
        if expected == "assistant":
            errors.append(
                {
                    "type": "string_type",
                    "loc": (*loc, "content"),
                    "msg": "Input should be a valid string",
                    "input": message["content"],
                }
            )
            continue
        errors.append(
            {
                "type": "literal_error",
                "loc": (*loc, "role"),
                "msg": f"Input should be '{expected}'",
                "input": role,
                "ctx": {"expected": f"'{expected}'"},
            }
        )
        if expected in ("tool", "function"):
            field = "tool_call_id" if expected == "tool" else "name"
            errors.append(
                {"type": "missing", "loc": (*loc, field), "msg": "Field required", "input": message}
            )
    return errors
