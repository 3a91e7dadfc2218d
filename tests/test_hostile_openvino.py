"""Broken and hostile OpenVINO IR: unsafe XML refused, broken structure reported, .bin never read whole."""

from __future__ import annotations

import os
import re
import shutil

import numpy as np
import pytest

from graphlint.load import load_model
from tests.hostile_support import ADD_WEIGHTS as WEIGHTS
from tests.hostile_support import (
    add_ir,
    assert_input_error,
    assert_loads,
    body_of,
    lint_cli,
    messages,
    sparse_file,
)
from tests.hostile_support import write_ir as write


@pytest.fixture(scope="module")
def ir() -> tuple[str, bytes]:
    return add_ir()


def test_the_unmodified_ir_is_clean(tmp_path, ir):
    xml, data = ir
    p = write(tmp_path, "add", xml, data)
    assert_loads(p, str(tmp_path))
    np.testing.assert_array_equal(load_model(p).graph.values["w"].const.numpy(), WEIGHTS)


def test_malformed_xml(tmp_path, ir):
    xml, data = ir
    assert_input_error(write(tmp_path, "half", xml[: len(xml) // 2], data), str(tmp_path), says="malformed XML at line")
    assert_input_error(write(tmp_path, "binary", "\x00\x01\x02garbage"), str(tmp_path), says="malformed XML")
    assert_input_error(write(tmp_path, "empty", ""), str(tmp_path), says="malformed XML")
    assert_input_error(write(tmp_path, "other", "<?xml version='1.0'?><svg><g/></svg>"), str(tmp_path),
                       says="not an OpenVINO IR")


def test_billion_laughs_is_refused_without_expanding(tmp_path, ir):
    xml, data = ir
    ents = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    doc = f'<?xml version="1.0"?>\n<!DOCTYPE net [{"".join(ents)}]>\n' + body_of(xml).replace(
        'name="add"', 'name="&lol9;"')
    assert_input_error(write(tmp_path, "laughs", doc, data), str(tmp_path), says="unsafe XML refused")


def test_external_entity_is_never_read(tmp_path, ir):
    xml, data = ir
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-XXE")
    for name, dtd in (
        ("xxe", f'<!DOCTYPE net [<!ENTITY xxe SYSTEM "file://{secret}">]>'),
        ("xxe_param", f'<!DOCTYPE net [<!ENTITY % p SYSTEM "file://{secret}"> %p;]>'),
        ("xxe_dtd", f'<!DOCTYPE net SYSTEM "file://{secret}">'),
    ):
        doc = '<?xml version="1.0"?>\n' + dtd + "\n" + body_of(xml).replace('name="add"', 'name="&xxe;"', 1) \
            if name == "xxe" else '<?xml version="1.0"?>\n' + dtd + "\n" + body_of(xml)
        p = write(tmp_path, name, doc, data)
        line = assert_input_error(p, str(tmp_path), says="unsafe XML refused")
        r = lint_cli(p, "--format", "json")
        assert "TOPSECRET" not in line + r.out + r.err


def test_edges_to_missing_layers_or_ports(tmp_path, ir):
    xml, data = ir
    broken = re.sub(r'from-layer="1" from-port="0"', 'from-layer="99" from-port="0"', xml)
    broken = re.sub(r'to-layer="3" to-port="0"', 'to-layer="3" to-port="7"', broken)
    run = assert_loads(write(tmp_path, "edges", broken, data), str(tmp_path))
    text = messages(run)
    assert "missing layer 99 port 0" in text and "missing layer 3 port 7" in text
    lines = [x["locations"][0]["physicalLocation"].get("region", {}).get("startLine") for x in run["results"]
             if "refers to a missing" in x["message"]["text"]]
    assert all(isinstance(n, int) and n > 1 for n in lines)  # each edge finding points at its <edge> line


def test_duplicate_layer_ids(tmp_path, ir):
    xml, data = ir
    dup = xml.replace('<layer id="2"', '<layer id="1"')
    assert "Duplicate layer id '1'" in messages(assert_loads(write(tmp_path, "dup", dup, data), str(tmp_path)))


def test_unknown_layer_type(tmp_path, ir):
    xml, data = ir
    p = write(tmp_path, "unknown", re.sub(r'type="Add" version="\w+"', 'type="Frobnicate" version="opset99"', xml),
              data)
    assert_loads(p, str(tmp_path))
    assert {n.op_type for n in load_model(p).graph.nodes} >= {"Frobnicate", "Const", "Parameter", "Result"}


def test_garbage_attributes_and_dims(tmp_path, ir):
    xml, data = ir
    junk = xml.replace("<dim>4</dim>", "<dim>-7</dim>", 1).replace("<dim>1</dim>", "<dim>1..x</dim>", 1)
    junk = junk.replace('shape="1, 4"', 'shape="1,abc,,99999999999999999999"')
    p = write(tmp_path, "junk", junk, data)
    assert_loads(p, str(tmp_path))


def test_bin_missing(tmp_path, ir):
    xml, _ = ir
    p = write(tmp_path, "nobin", xml)
    assert "'nobin.bin' is missing" in messages(assert_loads(p, str(tmp_path)))


def test_bin_shorter_than_offset_plus_size(tmp_path, ir):
    xml, data = ir
    p = write(tmp_path, "short", xml, data[:8])
    assert "reads bytes 0..16 but the .bin has 8 bytes" in messages(assert_loads(p, str(tmp_path)))
    p = write(tmp_path, "offset", re.sub(r'offset="0"', 'offset="4096"', xml), data)
    assert "reads bytes 4096..4112" in messages(assert_loads(p, str(tmp_path)))
    p = write(tmp_path, "nonnum", re.sub(r'offset="0" size="16"', 'offset="-5" size="x"', xml), data)
    assert "invalid offset '-5' or size 'x'" in messages(assert_loads(p, str(tmp_path)))


def test_bin_that_is_a_directory(tmp_path, ir):
    xml, _ = ir
    p = write(tmp_path, "dirbin", xml)
    (tmp_path / "dirbin.bin").mkdir()
    assert "is missing or not a file" in messages(assert_loads(p, str(tmp_path)))


def test_huge_bin_is_never_read_whole(tmp_path, ir):
    """A 1 TiB (sparse) .bin: the Const at its very end is read alone, exactly its 16 bytes."""
    xml, _ = ir
    size = 1 << 40
    offset = size - 16
    p = write(tmp_path, "huge", xml.replace('offset="0"', f'offset="{offset}"'))
    try:
        sparse_file(str(tmp_path / "huge.bin"), size, WEIGHTS.tobytes())
    except OSError as e:
        pytest.skip(f"filesystem cannot hold a 1 TiB sparse file ({e.strerror})")
    assert_loads(p, str(tmp_path))
    tensor = load_model(p).graph.values["w"].const
    assert tensor.location == f"bin:{offset}+16"
    np.testing.assert_array_equal(tensor.numpy(), WEIGHTS)


def _nested_bodies(depth: int) -> str:
    opening = "".join(f'<layers><layer id="{i}" name="loop{i}" type="Loop" version="opset5"><body>'
                      for i in range(depth))
    leaf = ('<layers><layer id="p" name="p" type="Parameter" version="opset1"><output>'
            '<port id="0" precision="FP32"><dim>1</dim></port></output></layer></layers>')
    return f'<?xml version="1.0"?>\n<net name="deep" version="11">{opening}{leaf}{"</body></layer></layers>" * depth}</net>'


def test_bodies_nested_hundreds_deep_load(tmp_path):
    p = write(tmp_path, "deep300", _nested_bodies(300))
    assert_loads(p, str(tmp_path))
    assert sum(1 for _ in load_model(p).graph.graphs()) == 301


def test_bodies_nested_thousands_deep_are_refused_in_one_line(tmp_path):
    assert_input_error(write(tmp_path, "deep5000", _nested_bodies(5000)), str(tmp_path), says="nested deeper")


def test_deeply_nested_elements_are_refused(tmp_path, ir):
    xml, data = ir
    deep = xml.replace("<rt_info>", "<rt_info>" + "<a>" * 20000 + "</a>" * 20000, 1)
    assert_input_error(write(tmp_path, "deeprt", deep, data), str(tmp_path), says="nested deeper")


def test_deep_but_allowed_rt_info_is_bounded(tmp_path, ir):
    xml, data = ir
    deep = xml.replace("<rt_info>", "<rt_info>" + '<a name="k" value="v">' * 3000 + "</a>" * 3000, 1)
    p = write(tmp_path, "rt3000", deep, data)
    assert_loads(p, str(tmp_path))
    assert max(len(k) for k in load_model(p).rt_info) < 64  # keys stop growing past MAX_RT_DEPTH


def test_xml_path_that_is_a_symlink_loop(tmp_path):
    loop = tmp_path / "loop.xml"
    os.symlink(loop, loop)
    assert_input_error(str(loop), str(tmp_path), says="cannot read")


def test_copied_ir_with_unicode_and_spaces(tmp_path, ir):
    xml, data = ir
    folder = tmp_path / "modèles à tester"
    folder.mkdir()
    p = write(folder, "réseau de test", xml, data)
    shutil.copy(p, folder / "copie ✓.xml")
    shutil.copy(folder / "réseau de test.bin", folder / "copie ✓.bin")
    for path in (p, str(folder / "copie ✓.xml")):
        assert_loads(path, str(tmp_path))
