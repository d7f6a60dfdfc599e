"""MkDocs hook (``mkdocs.yml``, ``hooks:``): adds the reference pages generated from the code to the site.

The pages (settings, command line, exit statuses) come from :mod:`rank_pipeline.cli.reference`; they are
built in memory at each build, never written to ``docs/``, so they cannot fall behind the code.
"""

from __future__ import annotations

from mkdocs.structure.files import File, Files


def on_files(files: Files, config) -> Files:
    from rank_pipeline.cli.reference import pages

    for uri, text in pages().items():
        files.append(File.generated(config, uri, content=text))
    return files
