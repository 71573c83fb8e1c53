"""Addresses are checked where they enter the directory (no database needed to refuse one)."""

import pytest
from notifier.domain.addresses import InvalidAddress, parse_address
from notifier.domain.messages import Contact
from notifier.entrypoints.cli import customers
from notifier.service_layer.customers import checked


def test_internationalized_addresses_are_accepted_and_normalized():
    assert parse_address("josé@exämple.com").ascii is None  # no ASCII spelling: needs SMTPUTF8
    assert parse_address("ana@EXÄMPLE.com").unicode == "ana@exämple.com"
    assert parse_address("ana@exämple.com").ascii == "ana@xn--exmple-cua.com"
    assert parse_address("Ana@xn--bcher-kva.de").unicode == "Ana@bücher.de"
    assert checked(Contact(7, " ana@Example.COM ", "Ana")).email == "ana@example.com"


@pytest.mark.parametrize("text", ["", "ana", "ana@", "@example.com", "ana@@example.com", "a b@example.com",
                                  "ana@localhost", "ana@exa mple.com"])
def test_what_is_not_an_address_is_refused_with_the_reason(text):
    with pytest.raises(InvalidAddress, match="is not an e-mail address: "):
        parse_address(text)


def test_upsert_refuses_a_bad_address_before_touching_the_database(capsys):
    assert customers.main(["upsert", "--id", "7", "--email", "ana.example.com"]) == 2
    err = capsys.readouterr().err
    assert "refused, nothing written" in err and "must have an @-sign" in err


def test_csv_import_reports_every_bad_line_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "customers.csv"
    path.write_text("customer_id,email,name\n1,ana@example.com,Ana\n2,nope,Bob\n3,josé@exämple.com,José\n"
                    "x,c@example.com,Carl\n", encoding="utf-8")
    assert customers.main(["import", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 3: 'nope' is not an e-mail address" in err and "line 5:" in err
    assert "line 2" not in err and "line 4" not in err


def test_csv_import_reads_internationalized_rows(tmp_path):
    path = tmp_path / "customers.csv"
    path.write_text("customer_id,email,name,locale\n3,josé@exämple.com,José,es\n", encoding="utf-8")
    assert customers.read_csv(path) == [Contact(3, "josé@exämple.com", "José", "es")]


def test_the_locale_is_normalized_and_what_is_not_one_is_refused(capsys):
    assert checked(Contact(7, "ana@example.com", "Ana", "es-mx")).locale == "es_MX"
    assert checked(Contact(7, "ana@example.com", "Ana", "vi")).locale == "vi"
    assert customers.main(["upsert", "--id", "7", "--email", "ana@example.com", "--locale", "elvish!"]) == 2
    assert "is not a locale" in capsys.readouterr().err
