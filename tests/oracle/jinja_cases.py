#!/usr/bin/env python3
"""Feature cases for ixbench's Jinja engine, with expected output from Jinja2 itself.

Writes tests/unit/jinja/cases.json: each case's template and context, what Jinja2 3.1 renders
with the environment transformers' apply_chat_template uses (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, {% generation %}, raise_exception, strftime_now pinned
to 2025-06-28 13:05:09, transformers' tojson), or that it fails. `oracle` marks the cases that
@huggingface/jinja renders identically, or also refuses (checked here by running
tests/oracle/jinja_oracle.js):
tests/unit/jinja/oracle_test.cc renders those with the oracle at test time; the others exercise
Python semantics @huggingface/jinja does not share (see docs/tokenizer.md).

Usage: python3 tests/oracle/jinja_cases.py > tests/unit/jinja/cases.json
"""
import json
import os
import subprocess
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NOW = [2025, 6, 28, 13, 5, 9]


class AssistantTracker(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime(*NOW).strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}]

# (name, template, context)
CASES = [
    # text, comments, whitespace control
    ("text.plain", "Hello, world!", {}),
    ("text.trailing_newline_dropped", "line\n", {}),
    ("text.crlf_normalized", "a\r\nb\rc", {}),
    ("ws.trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("ws.lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\n  y\n", {}),
    ("ws.minus_both_sides", "a  {{- ' b ' -}}  c", {}),
    ("ws.minus_statement", "A {%- if true -%} B {%- endif -%} C", {}),
    ("ws.comment", "a\n{#- comment -#}\n b {# kept #}c", {}),
    ("ws.comment_lstrip", "x\n   {# note #}\ny", {}),
    ("ws.plus_disables_lstrip", "a\n  {%+ if true %}b{% endif %}", {}),
    ("ws.indented_loop", "line1\n  {% for i in [1, 2] %}\n    item{{ i }}\n  {% endfor %}\nafter\n", {}),
    ("ws.variable_not_lstripped", "a\n  {{ 'b' }}\n", {}),
    ("ws.tabs", "\t{% if true %}\n\tx\n\t{% endif %}\n", {}),
    ("ws.raw", "{% raw %}{{ not rendered }} {% if %}{% endraw %} {{ 'yes' }}", {}),
    # literals
    ("literal.strings", "{{ \"it's\" }} {{ 'say \"hi\"' }} {{ 'a' 'b' }}", {}),
    ("literal.escapes", "{{ 'tab\\there|nl\\n|\\u00e9|\\x41|\\\\|\\'' }}", {}),
    ("literal.numbers", "{{ 42 }} {{ -7 }} {{ 1.5 }} {{ 1.0 }} {{ 1.5e3 }} {{ 0.25 }}", {}),
    ("literal.number_forms", "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 1e-5 }} {{ 1e16 }}", {}),
    ("literal.constants", "{{ true }} {{ True }} {{ false }} {{ False }} {{ none }} {{ None }}", {}),
    ("literal.list_tuple_dict", "{{ [1, 'a', none, true] }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ {'a': 1, 'b': [2]} }}", {}),
    ("literal.trailing_commas", "{{ [1, 2,] }} {{ {'a': 1,} }}", {}),
    ("literal.list_json_like", "{{ [1, 2] }} {{ [[1], []] }}", {}),
    # arithmetic and operators
    ("op.arithmetic", "{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 1 / 4 }} {{ 10 / 2 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }}", {}),
    ("op.python_division", "{{ -7 // 2 }} {{ 7 % -3 }} {{ -7 % 3 }} {{ 2 ** -1 }} {{ 9 ** 0.5 }}", {}),
    ("op.float_repr", "{{ 0.1 + 0.2 }} {{ 1e16 * 10 }} {{ 123456789.0 }} {{ 1 / 3 }} {{ 2.5 * 2 }}", {}),
    ("op.concat_tilde", "{{ 'a' ~ 1 ~ 'b' }} {{ 1 ~ 2 }} {{ x ~ 'y' }}", {"x": "X"}),
    ("op.concat_tilde_none", "{{ 'a' ~ none ~ 1.5 ~ true }}", {}),
    ("op.string_plus", "{{ 'ab' + 'cd' }} {{ [1] + [2, 3] }}", {}),
    ("op.repeat", "{{ 'ab' * 3 }} {{ [0] * 3 }} {{ 3 * 'x' }}", {}),
    ("op.precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }}", {}),
    ("op.unary", "{{ -x }} {{ +x }} {{ - -3 }}", {"x": 5}),
    ("op.compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ [1, 2] == [1, 2] }}", {}),
    ("op.compare_chained", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {}),
    ("op.in", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 3 not in [1] }}", {}),
    ("op.logic", "{{ true and false }} {{ true or false }} {{ not true }} {{ not 0 }} {{ 0 or 'x' }} {{ 1 and 2 }} {{ '' and 1 }}", {}),
    ("op.truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    ("op.ternary", "{{ 'a' if x else 'b' }} {{ 'a' if y else 'b' }} {{ 'n' if x is none else 'v' }}", {"x": True, "y": []}),
    ("op.ternary_no_else", "[{{ 'a' if false }}]", {}),
    # variables, attributes, subscripts, slices
    ("access.attribute_and_item", "{{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ m['missing'] }}|", {"m": {"role": "user", "content": "hi"}}),
    ("access.nested", "{{ a.b.c }} {{ a['b']['c'] }} {{ l[1].x }} {{ l.0 }}", {"a": {"b": {"c": 7}}, "l": [1, {"x": 2}]}),
    ("access.negative_index", "{{ l[-1] }} {{ 'abc'[-1] }} {{ 'abc'[0] }}", {"l": [1, 2, 3]}),
    ("access.slices", "{{ 'abcdef'[1:3] }} {{ 'abcdef'[::-1] }} {{ [1, 2, 3][1:] }} {{ [1, 2, 3][:-1] }} {{ [1, 2, 3, 4][::2] }} {{ 'abcdef'[-3:] }}", {}),
    ("access.slice_reverse_step", "{{ 'abcdef'[:-4:-1] }} {{ [1, 2, 3][5:] }} {{ [1, 2, 3][::-2] }}", {}),
    ("access.out_of_range", "[{{ l[9] }}][{{ d['nope'] }}][{{ none.attr }}][{{ 'abc'.nope }}]", {"l": [1], "d": {}}),
    ("access.dict_methods_shadow_keys", "{{ d['items'] }} {{ d.get('items') }}", {"d": {"items": "value"}}),
    ("access.unicode_index", "{{ s|length }} {{ s[1] }} {{ s[1:3] }} {{ s[::-1] }}", {"s": "héllo"}),
    # if / for
    ("if.elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %}", {}),
    ("if.nested", "{% if a %}{% if b %}ab{% else %}a{% endif %}{% else %}none{% endif %}", {"a": 1, "b": 0}),
    ("for.loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ x }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("for.previtem_nextitem", "{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", {}),
    ("for.cycle_changed", "{% for x in [1, 1, 2] %}{{ loop.cycle('a', 'b') }}{{ loop.changed(x) }}{% endfor %}", {}),
    ("for.else", "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for.filter", "{% for x in xs if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% endfor %}", {"xs": [1, 2, 3]}),
    ("for.tuple_unpacking", "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }};{% endfor %}{% for (k, v) in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("for.dict_items_and_keys", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", {"d": {"a": 1, "b": 2}}),
    ("for.break_continue", "{% for i in range(6) %}{% if i == 4 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}", {}),
    ("for.nested_loop_outer", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in [1, 2] %}{{ outer.index }}{{ loop.index }} {% endfor %}{% endfor %}", {}),
    ("for.scoping", "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}{% if true %}{% set x = 3 %}{% endif %}{{ x }}", {}),
    ("for.iteration_resets_set", "{% for i in range(3) %}{% if i == 1 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}", {}),
    ("for.reversed_messages", "{% for m in messages[::-1] %}{{ (messages|length - 1) - loop.index0 }}:{{ m.role }} {% endfor %}", {"messages": MSGS}),
    # set / namespace / with
    ("set.simple_and_tuple", "{% set a = 1 %}{% set b, c = 2, 3 %}{{ a + b + c }}", {}),
    ("set.block", "{% set x %}a{{ 1 + 1 }}b{% endset %}{{ x }}|{{ x|length }}", {}),
    ("set.block_filtered", "{% set x | upper %}  abc {% endset %}[{{ x }}]", {}),
    ("set.namespace", "{% set ns = namespace(a=1, items=[]) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.a }} {{ ns.items }}", {}),
    ("set.namespace_flags", "{% set ns = namespace(found=false) %}{% for m in messages %}{% if m.role == 'assistant' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}", {"messages": MSGS}),
    ("with.block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    # macros and call blocks
    ("macro.defaults_and_keywords", "{% macro m(a, b=2) %}[{{ a }}-{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=0) }}", {}),
    ("macro.default_uses_argument", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}", {}),
    ("macro.varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}", {}),
    ("macro.sees_globals", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ bos_token }}{% endmacro %}{{ m() }}", {"bos_token": "<s>"}),
    ("macro.recursive", "{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(4) }}", {}),
    ("macro.returns_string", "{% macro m() %}abc{% endmacro %}{% set s = m() %}{{ s|upper }} {{ m()|length }}", {}),
    ("macro.whitespace", "{%- macro item(x) -%}\n  <{{ x }}>\n{%- endmacro -%}\n{{ item(1) }}{{ item(2) }}", {}),
    ("call.caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('p') %}in {{ 1 + 1 }}{% endcall %}", {}),
    ("call.caller_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(item) each([1, 2]) %}[{{ item }}]{% endcall %}", {}),
    ("filter.block", "{% filter upper %}abc {{ 'def' }}{% endfilter %}", {}),
    ("filter.block_chain", "{% filter trim|upper %}  x y  {% endfilter %}|", {}),
    ("generation.tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}|{% endfor %}", {"messages": MSGS}),
    # tests
    ("test.defined", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x is not undefined }}", {"x": 1}),
    ("test.types", "{{ none is none }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is mapping }} {{ 1 is number }} {{ 1 is integer }} {{ 1.5 is integer }} {{ 1.5 is float }} {{ true is boolean }}", {}),
    ("test.sequence_iterable", "{{ [] is iterable }} {{ 'a' is iterable }} {{ [] is sequence }} {{ 'a' is sequence }} {{ 1 is iterable }}", {}),
    ("test.true_false", "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }}", {}),
    ("test.odd_even_divisible", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby(3) }} {{ 9 is divisibleby 4 }}", {}),
    ("test.comparisons", "{{ 3 is eq 3 }} {{ 3 is equalto 3 }} {{ 2 is ne 1 }} {{ 2 is gt 1 }} {{ 2 is lt 1 }} {{ 2 is ge 2 }} {{ 2 is le 1 }} {{ 1 is sameas 1 }}", {}),
    ("test.misc", "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'a' is in 'abc' }} {{ range is callable }} {{ 'upper' is filter }} {{ 'odd' is test }}", {}),
    ("test.negated_in_condition", "{% for m in messages %}{% if m.content is not string %}X{% elif m.tool_calls is defined %}T{% else %}{{ m.role[0] }}{% endif %}{% endfor %}", {"messages": MSGS}),
    # filters
    ("filter.strings", "{{ '  a b  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}", {}),
    ("filter.replace", "{{ 'a-b-c'|replace('-', '+') }} {{ 'a-b-c'|replace('-', '', 1) }}", {}),
    ("filter.length_count", "{{ 'abc'|length }} {{ [1, 2]|count }} {{ {'a': 1}|length }} {{ 'héllo'|length }}", {}),
    ("filter.join", "{{ [1, 2, 3]|join(', ') }} {{ ['a', 'b']|join }} {{ xs|join('-', attribute='n') }}", {"xs": [{"n": 1}, {"n": 2}]}),
    ("filter.first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ []|first }}]", {}),
    ("filter.default", "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ x|d('z') }} {{ 0|default(5, boolean=true) }}", {}),
    ("filter.tojson", "{{ x|tojson }}", {"x": {"a": [1, 2.5, "é\n\"q\""], "b": None, "c": True, "d": {}, "e": []}}),
    ("filter.tojson_indent", "{{ x|tojson(indent=2) }}", {"x": {"a": [1, {"b": "c"}], "d": [], "e": {}}}),
    ("filter.tojson_options", "{{ 'é<>&'|tojson }} {{ 'é'|tojson(ensure_ascii=true) }} {{ x|tojson(separators=(',', ':')) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}", {"x": {"a": [1, 2]}}),
    ("filter.tojson_floats", "{{ [1.0, 0.5, 1e20, -0.0, 100]|tojson }}", {}),
    ("filter.string_int_float", "{{ 5|string ~ '!' }} {{ '42'|int + 1 }} {{ '3.7'|int }} {{ 'x'|int(7) }} {{ '2.5'|float }} {{ 3|float }} {{ true|int }}", {}),
    ("filter.list", "{{ 'ab'|list }} {{ (1, 2)|list }} {{ {'a': 1}|list }}", {}),
    ("filter.items_dictsort", "{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(by='value', reverse=true) }}", {"d": {"b": 1, "a": 3, "C": 2}}),
    ("filter.map_attribute", "{{ xs|map(attribute='n')|list }} {{ xs|map(attribute='missing', default='-')|list }} {{ xs|map(attribute='deep.k')|list }}", {"xs": [{"n": 1, "deep": {"k": "a"}}, {"n": 2, "deep": {"k": "b"}}]}),
    ("filter.map_filter", "{{ ['a', 'b']|map('upper')|list }} {{ [' a ']|map('trim')|list }}", {}),
    ("filter.select_reject", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }}", {}),
    ("filter.selectattr_rejectattr", "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ messages|rejectattr('role', 'in', ['user', 'system'])|list|length }} {{ xs|selectattr('ok')|list|length }}", {"messages": MSGS, "xs": [{"ok": True}, {"ok": False}]}),
    ("filter.unique_reverse_sort", "{{ [1, 2, 2, 3]|unique|list }} {{ ['A', 'a', 'b']|unique|list }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }}", {}),
    ("filter.sort_case", "{{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ xs|sort(attribute='n')|map(attribute='n')|list }}", {"xs": [{"n": 3}, {"n": 1}]}),
    ("filter.abs_round", "{{ -3|abs }} {{ (-2.5)|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 7|round }} {{ 1.234|round(1, 'floor') }} {{ 1.21|round(1, 'ceil') }}", {}),
    ("filter.safe", "{{ '<b>'|safe }}", {}),
    ("filter.indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'x'|indent('>> ', first=true) }}", {}),
    ("filter.batch_slice", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }} {{ [1, 2, 3, 4, 5]|slice(2)|list }}", {}),
    ("filter.aggregates", "{{ [1, 2, 3]|sum }} {{ xs|sum(attribute='n') }} {{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ ['b', 'A']|max }}", {"xs": [{"n": 1}, {"n": 5}]}),
    ("filter.text_misc", "{{ 'a b  c'|wordcount }} {{ 'hello world foo'|truncate(9) }} [{{ 'hi'|center(6) }}] {{ '%s-%d'|format('a', 3) }} {{ '<a&b>'|e }}", {}),
    ("filter.attr", "{{ ns|attr('x') }} [{{ d|attr('x') }}]", {"d": {"x": 1}}),
    # python methods
    ("method.startswith_endswith", "{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith('lo') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.startswith('b', 1) }}", {}),
    ("method.strip", "[{{ '  hi  '.strip() }}][{{ '\\n\\nhi\\n'.lstrip('\\n') }}][{{ 'hi\\n\\n'.rstrip('\\n') }}][{{ 'xxhixx'.strip('x') }}][{{ '  a '.lstrip() }}]", {}),
    ("method.strip_keeps_spaces", "[{{ ' \\n thought \\n '.strip('\\n') }}]", {}),
    ("method.split", "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ 'x</think>y</think>z'.split('</think>')[-1] }}", {}),
    ("method.split_think", "{% set c = m.content %}{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", {"m": {"content": "<think>\nreason\n</think>\n\nanswer"}}),
    ("method.replace_find_count", "{{ 'hello'.replace('l', 'L') }} {{ 'hello'.replace('l', 'L', 1) }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }}", {}),
    ("method.case", "{{ 'Hello World'.upper() }} {{ 'Hello World'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'straße'.upper() }} {{ 'ÄÖÜ'.lower() }}", {}),
    ("method.format", "{{ '{} and {}'.format(1, 'x') }} {{ '{name}!'.format(name='n') }} {{ '{:>5}|{:<4}|{:^5}'.format('a', 'b', 'c') }} {{ '{:.2f}'.format(3.14159) }}", {}),
    ("method.dict", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}", {"d": {"a": 1, "b": 2}}),
    ("method.misc", "{{ [1, 2].index(2) }} {{ (1, 2, 1).count(1) }} {{ 'a b'.partition(' ') }} {{ '7'.zfill(3) }} {{ 'abc'.isalpha() }} {{ '12'.isdigit() }} {{ ' '.isspace() }} {{ ','.join(['a', 'b']) }}", {}),
    ("method.percent_format", "{{ '%s-%d-%05.2f-%x-%r' % ('a', 3, 3.14159, 255, 'q') }} {{ '%(a)s=%(b)s' % {'a': 1, 'b': 2} }} {{ '%5s|%-5s|' % ('r', 'l') }}", {}),
    # globals
    ("global.range", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {% for i in range(2) %}{{ i }}{% endfor %}", {}),
    ("global.dict", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {{ dict({'k': 'v'}, z=0) }}", {}),
    ("global.cycler_joiner", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{% set j = joiner('|') %}{% for i in [1, 2, 3] %}{{ j() }}{{ i }}{% endfor %}", {}),
    ("global.strftime_now", "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %B %Y %H:%M') }}", {}),
    ("global.context_shadows_global", "{{ range }}", {"range": "mine"}),
    # chat-template idioms
    ("idiom.add_generation_prompt_default", "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{{ add_generation_prompt }}", {}),
    ("idiom.system_first", "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% endif %}{{ system }}|{% for m in loop_messages %}{{ m.role }} {% endfor %}", {"messages": MSGS}),
    ("idiom.tool_calls", "{% for m in messages %}{% if m.tool_calls %}{% for tc in m.tool_calls %}{% if tc.function is defined %}{% set tc = tc.function %}{% endif %}{{ tc.name }}({{ tc.arguments|tojson }}){% if not loop.last %}, {% endif %}{% endfor %}{% endif %}{% endfor %}", {"messages": [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1, "y": "é"}}}, {"function": {"name": "g", "arguments": {}}}]}]}),
    ("idiom.content_parts", "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for part in m.content %}{% if part.type == 'text' %}{{ part.text }}{% endif %}{% endfor %}{% endif %}|{% endfor %}", {"messages": [{"role": "user", "content": "plain"}, {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]}),
    ("idiom.raise_exception", "{% for m in messages %}{% if m.role not in ['user', 'assistant', 'system'] %}{{ raise_exception('Unsupported role: ' + m.role) }}{% endif %}{% endfor %}", {"messages": [{"role": "critic"}]}),
    # the same features written within @huggingface/jinja's subset (booleans printed through
    # conditionals: it prints true/false where Python prints True/False)
    ("oracle.literals", "{{ 42 }} {{ -7 }} {{ 1.5 }} {{ 1.0 }} {{ 0.25 }} {{ 'a' 'b' }} {{ [1, 2] }} {{ {'a': [1, 'x']}|tojson }}", {}),
    ("oracle.loop_vars", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ x }}{{ loop.revindex }}{{ loop.revindex0 }}{{ 'F' if loop.first }}{{ 'L' if loop.last }}{{ loop.length }}|{% endfor %}", {"xs": ["a", "b", "c"]}),
    ("oracle.compare_logic", "{{ 'y' if 1 < 2 else 'n' }}{{ 'y' if 2 <= 2 else 'n' }}{{ 'y' if 3 > 4 else 'n' }}{{ 'y' if 1 == 1.0 else 'n' }}{{ 'y' if 'a' != 'b' else 'n' }}{{ 'y' if true and not false else 'n' }}{{ 'y' if none or 0 else 'n' }}", {}),
    ("oracle.in", "{{ 'y' if 'b' in 'abc' else 'n' }}{{ 'y' if 2 in [1, 2] else 'n' }}{{ 'y' if 'k' in {'k': 1} else 'n' }}{{ 'y' if 'z' not in 'abc' else 'n' }}{{ 'y' if 3 not in [1] else 'n' }}", {}),
    ("oracle.tests", "{{ 'y' if x is defined else 'n' }}{{ 'y' if y is undefined else 'n' }}{{ 'y' if none is none else 'n' }}{{ 'y' if 'a' is string else 'n' }}{{ 'y' if {} is mapping else 'n' }}{{ 'y' if 1 is number else 'n' }}{{ 'y' if 1 is integer else 'n' }}{{ 'y' if true is boolean else 'n' }}{{ 'y' if 3 is odd else 'n' }}{{ 'y' if 4 is even else 'n' }}{{ 'y' if [] is iterable else 'n' }}{{ 'y' if x is not none else 'n' }}", {"x": 1}),
    ("oracle.arithmetic", "{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 1 / 4 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 10 - 2 - 3 }} {{ 'a' ~ 1 ~ 'b' }} {{ 'ab' + 'cd' }}", {}),
    ("oracle.slices", "{{ 'abcdef'[1:3] }} {{ 'abcdef'[::-1] }} {{ xs[1:] }} {{ xs[:-1] }} {{ xs[::2] }} {{ xs[-1] }} {{ 'abc'[0] }}", {"xs": [1, 2, 3, 4]}),
    ("oracle.filters", "{{ '  a b  '|trim }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello world'|title }}|{{ 'hello'|capitalize }}|{{ 'a-b'|replace('-', '+') }}|{{ 'abc'|length }}|{{ xs|length }}|{{ xs|first }}|{{ xs|last }}|{{ xs|join(', ') }}|{{ xs|reverse|join }}|{{ [3, 1, 2]|sort|join }}|{{ [1, 2, 2]|unique|join }}", {"xs": [1, 2, 3]}),
    ("oracle.default", "{{ x|default('d') }} {{ y|default('z') }} {{ ''|default('e', true) }}", {"y": "set"}),
    ("oracle.map_selectattr", "{{ messages|map(attribute='role')|join(',') }} {{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join('+') }} {{ messages|rejectattr('role', 'equalto', 'user')|list|length }}", {"messages": MSGS}),
    ("oracle.items_dictsort", "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 3}}),
    ("oracle.tojson", "{{ x|tojson }}|{{ x|tojson(indent=2) }}|{{ 'é\\n\"'|tojson }}", {"x": {"a": [1, 2.5, "é"], "b": None, "c": True, "d": {"e": []}}}),
    ("oracle.indent", "{{ 'a\\nb\\n\\nc'|indent }}", {}),
    ("oracle.methods", "{{ 'Hello'.startswith('He') and 'x' or 'y' }}{{ 'Hello'.endswith('z') and 'x' or 'y' }} {{ 'a,b,,c'.split(',')|join('|') }} {{ '  hi  '.strip() }} {{ '\\n\\nhi'.lstrip() }} {{ 'hi\\n'.rstrip() }} {{ 'hello'.replace('l', 'L') }} {{ 'a b'.upper() }} {{ 'A B'.lower() }} {{ 'hello world'.title() }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.keys()|join }} {{ d.values()|join }}", {"d": {"a": 1, "b": 2}}),
    ("oracle.split_think", "{% set c = m.content %}{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", {"m": {"content": "<think>\nreason\n</think>\n\nanswer"}}),
    ("oracle.namespace", "{% set ns = namespace(a=1, found=false, s='') %}{% for m in messages %}{% set ns.a = ns.a + 1 %}{% set ns.s = ns.s + m.role[0] %}{% if m.role == 'assistant' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.a }} {{ ns.s }} {{ 'y' if ns.found else 'n' }}", {"messages": MSGS}),
    ("oracle.set_and_block_set", "{% set a = 1 %}{% set b, c = 2, 3 %}{{ a + b + c }}{% set x %}a{{ 1 + 1 }}b{% endset %}{{ x }}", {}),
    ("oracle.macro", "{% macro m(a, b=2) %}[{{ a }}-{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=0) }}{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(3) }}", {}),
    ("oracle.call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('p') %}in {{ 1 + 1 }}{% endcall %}", {}),
    ("oracle.filter_block", "{% filter upper %}abc {{ 'def' }}{% endfilter %}", {}),
    ("oracle.for_else_break", "{% for x in [] %}x{% else %}empty{% endfor %} {% for i in range(6) %}{% if i == 4 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %} {% for x in xs if x > 1 %}{{ x }}{% endfor %}", {"xs": [1, 2, 3]}),
    ("oracle.tuple_unpack", "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }};{% endfor %}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"x": 1}}),
    ("oracle.whitespace", "  {% if true %}\n  x\n  {% endif %}\n  {{- ' y ' -}}  \n{#- c -#}\n z\n{% for i in [1, 2] %}\n    item{{ i }}\n{% endfor %}\n", {}),
    ("oracle.generation", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}|{% endfor %}", {"messages": MSGS}),
    ("oracle.raise_exception", "{{ raise_exception('Unsupported role: critic') }}", {}),
    ("oracle.strftime_now", "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %B %Y %H:%M') }}", {}),
    ("oracle.escapes", "{{ 'tab\\there|nl\\n|\\u00e9|\\x41|\\\\|\\'' }}", {}),
    # errors Jinja2 raises at render time
    ("error.undefined_attribute_chain", "{{ x.y.z }}", {"x": {}}),
    ("error.undefined_arithmetic", "{{ x + 1 }}", {}),
    ("error.none_not_iterable", "{% for x in none %}{% endfor %}", {}),
    ("error.str_plus_int", "{{ 'a' + 1 }}", {}),
    ("error.mixed_compare", "{{ 'a' < 1 }}", {}),
    ("error.sandbox_append", "{% set l = [1] %}{{ l.append(2) }}", {}),
    ("error.call_undefined", "{{ foo() }}", {}),
    ("error.division_by_zero", "{{ 1 / 0 }}", {}),
    ("error.unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("error.range_too_big", "{{ range(200000)|length }}", {}),
    ("error.macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {}),
    ("error.namespace_assign_on_dict", "{% set d = {} %}{% set d.x = 1 %}", {}),
    # syntax errors
    ("syntax.empty_if", "{% if %}{% endif %}", {}),
    ("syntax.unclosed_for", "{% for x in y %}", {}),
    ("syntax.unterminated_string", "{{ 'unterminated }}", {}),
    ("syntax.stray_end", "{% endif %}", {}),
    ("syntax.unknown_filter", "{{ x|nofilter }}", {}),
    ("syntax.unknown_test", "{{ x is notatest }}", {}),
    ("syntax.unknown_tag", "{% frobnicate %}", {}),
    ("syntax.unclosed_comment", "{# never closed", {}),
    ("syntax.unbalanced", "{{ (1 + 2 }}", {}),
    ("syntax.break_outside_loop", "{% break %}", {}),
]

def render_jinja2(template, context):
    try:
        return {"ok": True, "output": environment().from_string(template).render(**context)}
    except Exception as error:  # Jinja2 raises many types; all are failures here
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def render_oracle(cases):
    request = {"now": NOW, "cases": [{"template": t, "context": c} for _, t, c in cases]}
    done = subprocess.run(["node", os.path.join(ROOT, "tests", "oracle", "jinja_oracle.js")],
                          input=json.dumps(request), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["results"]


def main():
    oracle = render_oracle(CASES)
    out = []
    for (name, template, context), theirs in zip(CASES, oracle):
        ours = render_jinja2(template, context)
        case = {"name": name, "template": template, "context": context}
        if ours["ok"]:
            case["expected"] = ours["output"]
        else:
            case["error"] = ours["error"]
        if ours["ok"]:
            case["oracle"] = theirs["ok"] and theirs["output"] == ours["output"]
        else:
            case["oracle"] = not theirs["ok"]
        out.append(case)
    json.dump({"now": NOW, "cases": out}, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
