"""Each field's docstring (the string literal after it) as its JSON Schema description.

`rubricgate schema` prints a format's JSON Schema with every property described, for editors.
The text is the field's docstring in models/, read from the source only when a schema is made:
pydantic's `use_attribute_docstrings` would read every model class's source when it is defined,
about 3 ms a class on every command's start. A `Field(description=...)` wins over a docstring.
"""

import ast
import inspect
import textwrap
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with each field's docstring as its property's description."""
    schema = model.model_json_schema()
    for cls in models_in(model):
        where = schema if cls is model else schema.get("$defs", {}).get(cls.__name__, {})
        properties = where.get("properties", {})
        for name, doc in field_docs(cls).items():
            field = cls.model_fields.get(name)
            key = (field.alias or name) if field is not None else name
            if key in properties:
                properties[key].setdefault("description", doc)
    return schema


def models_in(model: type[BaseModel]) -> list[type[BaseModel]]:
    """The model and every model its fields hold (in lists, dicts, unions), each once."""
    found: list[type[BaseModel]] = []
    pending: list[Any] = [model]
    while pending:
        item = pending.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item in found:
                continue
            found.append(item)
            pending += [f.annotation for f in item.model_fields.values()]
        else:
            pending += list(typing.get_args(item))
    return found


@cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its docstring, for the class and the classes it inherits fields from."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not issubclass(klass, BaseModel) or klass is BaseModel:
            continue
        docs.update(_own_docs(klass))
    return docs


def _own_docs(cls: type) -> dict[str, str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # no source (a class made at run time)
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out = {}
    for field, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and isinstance(after, ast.Expr) \
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            out[field.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return out
