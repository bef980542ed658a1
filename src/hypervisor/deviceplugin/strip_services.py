#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copies a .proto file without its `service` blocks (comments and strings are skipped while
# matching braces), so protoc-c compiles the messages only: its service stubs would name a C
# member after rpc Register, and `register` is a C keyword. The gRPC method paths are spelled
# out by hand in dp_server.c.
# usage: strip_services.py IN.proto OUT.proto
import re
import sys


def strip(text):
    out, i, n = [], 0, len(text)
    depth, skipping = 0, False
    while i < n:
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
        elif text[i] == '"':
            m = re.compile(r'"(?:[^"\\\n]|\\.)*"').match(text, i)
            j = m.end() if m else i + 1
        else:
            m = re.compile(r'service\b').match(text, i) if depth == 0 and not skipping else None
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
                skipping = True
            j = i + 1
            if text[i] == '{':
                depth += 1
            elif text[i] == '}':
                depth -= 1
                if depth < 0:
                    sys.exit('strip_services: unbalanced "}"')
                if depth == 0 and skipping:
                    skipping = False
                    i = j
                    continue
        if not skipping:
            out.append(text[i:j])
        i = j
    if depth or skipping:
        sys.exit('strip_services: unterminated block')
    return ''.join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: strip_services.py IN.proto OUT.proto')
    with open(sys.argv[1], encoding='utf-8') as f:
        text = f.read()
    with open(sys.argv[2], 'w', encoding='utf-8') as f:
        f.write(strip(text))


if __name__ == '__main__':
    main()
