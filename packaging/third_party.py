#!/usr/bin/env python3
"""Writes THIRD-PARTY to stdout: what the static `retry` binary holds besides its own code, with
every licence text, as the MIT, BSD and ISC licences ask of a binary that carries their code.

    python3 packaging/third_party.py TRIPLE [LIBC_PACKAGE]

The crates are those linked into the binary for TRIPLE: the package's normal dependencies and
theirs, without build scripts' dependencies, proc-macros (they run in the compiler and are not
linked), or dev-dependencies. Identical licence texts are written once, after the list of the
crates that carry them. The C library (Debian's LIBC_PACKAGE, libc6-dev unless told: for a
cross build, libc6-dev-ARCH-cross) and the GCC runtime come last.
"""

import json
import os
import subprocess
import sys

LICENCE_FILE_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "UNLICENSE", "NOTICE", "COPYRIGHT")


def linked_crates(triple):
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--locked", "--format-version", "1", "--filter-platform", triple],
            check=True,
            capture_output=True,
        ).stdout
    )
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    root = metadata["resolve"]["root"]

    def is_proc_macro(package):
        return any("proc-macro" in target["kind"] for target in package["targets"])

    seen, todo = set(), [root]
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            normal = any(kind["kind"] is None for kind in dep["dep_kinds"])
            if normal and dep["pkg"] not in seen and not is_proc_macro(packages[dep["pkg"]]):
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    return sorted((packages[i] for i in seen), key=lambda p: (p["name"], p["version"]))


def licence_texts(package):
    directory = os.path.dirname(package["manifest_path"])
    names = sorted(
        name
        for name in os.listdir(directory)
        if name.upper().startswith(LICENCE_FILE_PREFIXES)
        and os.path.isfile(os.path.join(directory, name))
    )
    if package.get("license_file"):
        names.append(package["license_file"])
    texts = []
    for name in dict.fromkeys(names):
        with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as file:
            texts.append((name, file.read().strip() + "\n"))
    return texts


def glibc_version(package):
    try:
        return subprocess.run(
            ["dpkg-query", "--showformat=${Version}", "--show", package],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return os.confstr("CS_GNU_LIBC_VERSION")


def main():
    triple = sys.argv[1]
    libc = sys.argv[2] if len(sys.argv) > 2 else "libc6-dev"
    crates = linked_crates(triple)
    out = sys.stdout
    out.write(
        "The `retry` binary is linked statically. Besides its own code (MIT OR Apache-2.0, see\n"
        "LICENSE-MIT and LICENSE-APACHE), it holds the following, each under its own licence.\n\n"
    )
    out.write(f"Rust crates ({len(crates)}), from crates.io:\n\n")
    for package in crates:
        out.write(f"  {package['name']} {package['version']}: {package['license']}\n")

    by_text = {}
    for package in crates:
        for name, text in licence_texts(package):
            by_text.setdefault(text, []).append(f"{package['name']} {package['version']} ({name})")
    for text, carriers in by_text.items():
        out.write("\n" + "=" * 78 + "\n")
        out.write("The text below comes with: " + ", ".join(carriers) + "\n\n")
        out.write(text)

    out.write("\n" + "=" * 78 + "\n")
    out.write(
        f"The GNU C Library (Debian's {libc} {glibc_version(libc)}), linked statically, under the\n"
        "GNU Lesser General Public License 2.1 or later. Its source is Debian's glibc source\n"
        "package of that version (apt-get source glibc) and https://sourceware.org/glibc/. To\n"
        "relink `retry` against another version, build it from its source (CONTRIBUTING.md).\n"
        "The GCC runtime (libgcc) is linked under the GCC Runtime Library Exception.\n\n"
    )
    with open("/usr/share/common-licenses/LGPL-2.1", encoding="utf-8") as file:
        out.write(file.read())


if __name__ == "__main__":
    main()
