# The evaluate_python runner. The agent runs it as `python3 -I -c <this>`,
# with a JSON payload on stdin and a pipe on descriptor 3 for the result.
# The code's own output goes to the real stdout and stderr, so output of
# subprocesses is kept too, in order.
import ast
import json
import os
import re
import sys
import traceback
import types

_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _render(template, namespace):
    # Only {name} for a variable that exists is replaced; any other brace
    # (JSON, code, format specs) is left as it is.
    def substitute(match):
        name = match.group(1)
        if name in namespace and not name.startswith("_"):
            return str(namespace[name])
        return match.group(0)

    return _TEMPLATE.sub(substitute, template)


def _exportable(name, value):
    if name.startswith("_") or name == "reads":
        return False
    return not isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type))


def main():
    payload = json.loads(sys.stdin.read())
    result_pipe = os.fdopen(3, "w", encoding="utf-8")
    namespace = {"__name__": "__main__", "reads": payload["reads"]}
    namespace.update(payload["globals"])
    value_repr = None
    ok = True
    try:
        tree = ast.parse(payload["code"], "<evaluate_python>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<evaluate_python>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<evaluate_python>", "eval"), namespace)
            if value is not None:
                value_repr = repr(value)
    except SystemExit as exit_:
        ok = exit_.code in (None, 0)
        if not ok:
            traceback.print_exc()
    except BaseException:
        ok = False
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    exported = {}
    for name, value in namespace.items():
        if not _exportable(name, value):
            continue
        try:
            exported[name] = json.dumps(value)
        except (TypeError, ValueError, RecursionError):
            continue
    rendered = [_render(w, namespace) for w in payload["writes"]] if ok else []
    json.dump({"ok": ok, "value_repr": value_repr, "globals": exported, "writes": rendered}, result_pipe)
    result_pipe.close()


main()
