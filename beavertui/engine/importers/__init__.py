"""Readers of other programs' run records, turned into beavertui sessions (``beavertui import``).

An importer reads files only and yields session headers and events; writing them is the service's job.
Whatever the source did not record stays null or absent in the events and is listed in the header's
``imported`` block, so an imported session never shows an invented value as a measured one.
"""
