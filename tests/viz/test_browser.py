"""The pictures render in a real browser: headless Chromium (Debian's ``chromium`` package) screenshots each SVG
to a PNG of the picture's own size. Skips where no Chromium is installed."""
import re
import shutil
import struct
import subprocess

import pytest

import pycute as pc
from pycute.tensor.canonical import kmajor_smem_tensor
from pycute.demo import demo_copies

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium installed (apt-get install chromium)")


def pictures():
    plans = demo_copies()
    return {
        "demo_plan": plans[0][1].draw(),
        "two_cta_plan": next(p for _, p in plans if p.cta_group == 2).draw(),
        "smem_128x64_bf16_sw128": pc.draw_smem(kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
        "swizzled_layout": pc.draw_layout(pc.ComposedLayout(pc.Swizzle(3, 3, 3), 0, pc.Layout((8, 64), (64, 1)))),
    }


def inline_styles(svg: str) -> str:
    """The same picture with each class's rule written on its elements (``style="..."``) and no ``<style>``."""
    css = re.search(r"<style>(.*?)</style>", svg, re.S).group(1)
    rules = dict(re.findall(r"\.(c[0-9a-f]+)\{([^}]*)\}", css))
    text_rule = re.search(r"(?m)^text\{([^}]*)\}", css).group(1)
    out = re.sub(r'class="(c[0-9a-f]+)"', lambda m: f'style="{rules[m.group(1)]}"', svg.replace(
        "<style>" + css + "</style>", ""))

    def with_text_rule(m):
        attrs = m.group(1)
        if 'style="' in attrs:
            return "<text " + attrs.replace('style="', f'style="{text_rule};', 1) + ">"
        return f'<text style="{text_rule}" {attrs}>'
    return re.sub(r"<text ([^>]*)>", with_text_rule, out)


def pixels(data: bytes) -> bytes:
    """The PNG's decompressed image data (equal data: equal pixels)."""
    import zlib
    i, idat = 8, b""
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        if kind == b"IDAT":
            idat += data[i + 8:i + 8 + n]
        i += 12 + n
    return zlib.decompress(idat)


def screenshot(path, width, height, png):
    subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={width},{height}", f"--screenshot={png}", path.as_uri()],
                   capture_output=True, timeout=120)
    return png.read_bytes()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("name", list(pictures()))
def test_the_picture_renders_in_chromium(name, tmp_path):
    svg = pictures()[name]
    path = svg.save(tmp_path / f"{name}.svg")
    width, height = (int(float(v)) + 1 for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', str(svg)).groups())
    png = tmp_path / f"{name}.png"
    subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={width},{height}", f"--screenshot={png}", path.as_uri()],
                   capture_output=True, timeout=120)
    data = png.read_bytes()
    assert png_size(data) == (width, height)
    assert len(data) > 5000                      # drawn, not a blank page


@pytest.mark.parametrize("name", ["demo_plan", "smem_128x64_bf16_sw128"])
def test_class_styles_render_exactly_as_inline_styles(name, tmp_path):
    svg = str(pictures()[name])
    width, height = (int(float(v)) + 1 for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
    (tmp_path / "a.svg").write_text(svg)
    (tmp_path / "b.svg").write_text(inline_styles(svg))
    a = screenshot(tmp_path / "a.svg", width, height, tmp_path / "a.png")
    b = screenshot(tmp_path / "b.svg", width, height, tmp_path / "b.png")
    assert pixels(a) == pixels(b) and len(a) > 5000
