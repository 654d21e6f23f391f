#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The API reference: one man page per object, written from the headers.

The headers are the reference (every call's comment says its errors,
ownership, thread rules and release); this turns each banner section of
<ion/libion.h> and <ion/ion.h> into a section 3 page, so that the pages
cannot drift from the header: a comment followed by the declarations it
documents becomes one subsection, headed by the names it declares.

  api-pages.py --list HEADER...           the pages' names, one a line
  api-pages.py --aliases HEADER...        "function page" for every call
  api-pages.py --out DIR --version V HEADER...   writes the pages
  api-pages.py --check-symbols SYMFILE HEADER...  fails unless every
                                          symbol the version script exports
                                          has a page that documents it
"""
import os
import re
import sys

# A banner title -> (page, what the NAME line says of it).
PAGES = {
    'Calls on any buffer fd': ('ion_fd', 'calls on any buffer fd'),
    'Contexts': ('ion_ctx', 'a libion context: discovery, heaps.d, logging, hotplug'),
    'Heaps': ('ion_heap', 'the heaps a context found, and allocation by heap'),
    'Devices': ('ion_device', 'the devices a context read, and what each needs'),
    'Allocation requests': ('ion_alloc_config', 'allocation requests and their solutions'),
    'Constraints across processes': ('ion_constraints', 'constraints sent between processes'),
    'Late allocation': ('ion_buffer', 'buffers whose memory is chosen when first used'),
    'Pools': ('ion_pool', 'buffers kept ready for a hot path'),
    'Android compatibility: the calls': ('ion_open', "Android's libion calls"),
}

BANNER = re.compile(r'^/\* (.+?)\s*\*/$')
RULE = re.compile(r'^/\* -{20,} \*/$')
CONDITIONAL = re.compile(r'^#\s*(if|ifdef|ifndef|elif|else|endif)\b')
NAME = re.compile(r'\b(ion_\w+|ION_\w+)\s*\(')
DEFINE = re.compile(r'^#\s*define\s+(\w+)')
TYPE = re.compile(r'^(?:typedef\b.*\(\*\s*(\w+)\)|(?:struct|enum)\s+(\w+)\s*\{)')


def sections(path):
    """(title, lines) for each banner section of a header."""
    lines = open(path, encoding='utf-8').read().split('\n')
    out, title, body = [], None, []
    i = 0
    while i < len(lines):
        if RULE.match(lines[i]) and i + 2 < len(lines) and RULE.match(lines[i + 2]):
            if title:
                out.append((title, body))
            title, body = BANNER.match(lines[i + 1]).group(1), []
            i += 3
            continue
        if title:
            body.append(lines[i])
        i += 1
    if title:
        out.append((title, body))
    return out


def entries(body):
    """(comment lines, declaration lines) in the order the header has them:
    a comment documents the declarations that follow it up to a blank line
    or the next comment."""
    out, comment, decls, i = [], [], [], 0
    stop = ('#endif /*', '#ifdef __cplusplus', 'extern "C"', '}')

    def flush():
        nonlocal comment, decls
        if comment or decls:
            out.append((comment, decls))
        comment, decls = [], []

    while i < len(body):
        line = body[i]
        if line.startswith(stop) or CONDITIONAL.match(line):
            i += 1
            continue
        if line.strip().startswith('/*'):
            if decls:
                flush()
            text = []
            while True:
                text.append(body[i])
                if '*/' in body[i]:
                    break
                i += 1
            if comment and not decls:
                comment.append('')
            comment += [re.sub(r'^\s*(/\*+|\*/|\*)\s?', '', t).replace('*/', '').rstrip() for t in text]
            i += 1
            continue
        if not line.strip():
            if decls:
                flush()
            i += 1
            continue
        decl = [line]
        # A declaration runs to its ';' (or a #define's last line).
        if line.startswith('#'):
            while decl[-1].endswith('\\'):
                i += 1
                decl.append(body[i])
        else:
            depth = line.count('{') - line.count('}')
            while not (decl[-1].rstrip().endswith(';') and depth == 0):
                i += 1
                decl.append(body[i])
                depth += body[i].count('{') - body[i].count('}')
        if not any('__asm__' in d for d in decl):
            decls += decl
        i += 1
    flush()
    return out


def names(decls):
    found = []
    text = '\n'.join(decls)
    for line in decls:
        m = DEFINE.match(line) or TYPE.match(line.strip())
        if m:
            found.append(next(g for g in m.groups() if g))
    for m in NAME.finditer(text):
        if not text[:m.start()].rstrip().endswith('(*'):
            found.append(m.group(1))
    return list(dict.fromkeys(found))


def roff(text):
    text = text.replace('\\', '\\e').replace('-', '\\-')
    if text.startswith(('.', "'")):
        text = '\\&' + text
    return text


def page_text(page, summary, title, items, version, header, others):
    calls = [n for _, decls in items for n in names(decls) if n[0] == 'i']
    out = ['.\\" SPDX-License-Identifier: MIT',
           '.\\" Written by man/api-pages.py from the headers: edit those.',
           '.TH %s 3 "" "libion %s" "Library Functions Manual"' % (page.upper(), version),
           '.nh', '.ad l', '.SH NAME',
           roff(', '.join(dict.fromkeys([page] + calls))) + ' \\- ' + roff(summary),
           '.SH SYNOPSIS', '.nf', '.B #include <%s>' % header, '.PP']
    for _, decls in items:
        for d in decls:
            out.append(roff(d.replace('\t', '        ')) if d.strip() else '')
    out += ['.fi', '.PP', 'Link with', '.BR "pkg\\-config \\-\\-libs libion" .',
            '.SH DESCRIPTION',
            'The calls of the header section \\(lq%s\\(rq, with the header\'s own words.' % roff(title)]
    for comment, decls in items:
        heading = names(decls)
        if not comment and not decls:
            continue
        out.append('.SS "%s"' % roff(', '.join(heading) if heading else 'Notes'))
        if decls:
            out += ['.nf'] + [roff(d.replace('\t', '        ')) for d in decls if d.strip()] + ['.fi']
        para = []
        for line in comment + ['']:
            if line.strip():
                para.append(roff(line.strip()))
            elif para:
                out += ['.PP'] + para
                para = []
    out += ['.SH SEE ALSO',
            ',\n'.join('.BR %s (3)' % p for p in ['libion'] + others if p != page)]
    return '\n'.join(line for line in out) + '\n'


def collect(headers):
    pages = {}
    for header in headers:
        for title, body in sections(header):
            if title not in PAGES:
                continue
            page, summary = PAGES[title]
            include = 'ion/ion.h' if os.path.basename(header) == 'ion.h' else 'ion/ion.h'
            pages[page] = (summary, title, entries(body), include)
    return pages


def main(argv):
    mode, out, version, symfile, headers = None, None, '', None, []
    i = 1
    while i < len(argv):
        if argv[i] in ('--list', '--aliases'):
            mode = argv[i]
        elif argv[i] == '--out':
            mode, out = '--out', argv[i + 1]
            i += 1
        elif argv[i] == '--check-symbols':
            mode, symfile = argv[i], argv[i + 1]
            i += 1
        elif argv[i] == '--version':
            version = argv[i + 1]
            i += 1
        else:
            headers.append(argv[i])
        i += 1
    pages = collect(headers)
    missing = [t for t in PAGES if PAGES[t][0] not in pages]
    if missing:
        sys.exit('api-pages.py: no header section %s' % ', '.join(missing))
    if mode == '--list':
        print('\n'.join(p + '.3' for p in pages))
    elif mode == '--aliases':
        for page, (_, _, items, _) in pages.items():
            for _, decls in items:
                for n in names(decls):
                    if n.startswith('ion_') and n != page:
                        print(n, page)
    elif mode == '--out':
        for page, (summary, title, items, include) in pages.items():
            with open(os.path.join(out, page + '.3'), 'w', encoding='utf-8') as f:
                f.write(page_text(page, summary, title, items, version, include, list(pages)))
    elif mode == '--check-symbols':
        documented = {n for _, _, items, _ in pages.values()
                      for comment, decls in items if comment for n in names(decls)}
        exported = re.findall(r'^\s+(\w+);', open(symfile, encoding='utf-8').read(), re.M)
        missing = [s for s in exported if s not in documented and s != 'local']
        for s in missing:
            print('no page documents %s (a comment before its declaration)' % s)
        print('%d of %d exported symbols documented' % (len(exported) - len(missing), len(exported)))
        sys.exit(1 if missing else 0)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
