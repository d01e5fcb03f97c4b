"""TPM 1.2 command formulas of Gunupudi & Tate (2010), sections III, IV and VI.

Coefficients are the wire sizes (input, output bytes) and hashed bytes of the
calls the paper measured; for variable-size commands they are the sizes of
the paper's experiments.
"""

from trustlab.timing.formulas import register

FAMILY = "tpm1.2"
_PAPER = "Gunupudi & Tate 2010"

# command: (ohir, ohor, rsa_dec, rsa_enc, rsa_sign, sha1_byte, where, aliases)
_TABLE = {
    "TPM_Seal": (98, 319, 0, 1, 0, 2240, "Sec. III", ("Seal",)),
    "TPM_UnBind": (319, 66, 1, 0, 0, 2112, "Sec. III", ("UnBind", "Unbind")),
    "TPM_Sign": (83, 311, 0, 0, 1, 1024, "Sec. III", ("Sign",)),
    "TPM_Quote": (84, 800, 0, 0, 1, 2048, "Sec. IV", ("Quote",)),
    "TPM_Unseal": (372, 107, 1, 0, 0, 2816, "Sec. IV", ("Unseal",)),
    "TPM_AuthorizeMigrationKey": (341, 357, 0, 0, 0, 1664, "Sec. IV and VI-B",
                                  ("AuthMigKey", "TPM_AuthMigrationKey")),
    "TPM_CreateMigrationBlob": (672, 554, 1, 1, 0, 5696, "Sec. IV", ("CreateMigBlob",)),
    "TPM_ChangeAuth": (388, 352, 1, 1, 0, 4160, "Sec. IV", ("ChangeAuth",)),
    "TPM_CMK_ApproveMA": (75, 71, 0, 0, 0, 1024, "Sec. VI-B", ("CMK_ApproveMA",)),
    "TPM_CMK_CreateKey": (154, 362, 0, 1, 0, 3008, "Sec. VI-B", ("CMK_CreateKey",)),
    "TPM_LoadKey2": (370, 55, 1, 0, 0, 2240, "Sec. VI-B", ("LoadKey2",)),
    "TPM_CertifyKey2": (148, 436, 0, 0, 1, 1920, "Sec. VI-B", ("CertifyKey2",)),
    "TPM_CMK_CreateBlob": (683, 513, 1, 1, 0, 5440, "Sec. VI-B (CMK_CreateMigrationBlob)",
                           ("CMK_CreateBlob", "TPM_CMK_CreateMigrationBlob")),
    "TPM_CMK_ConvertMigration": (680, 311, 1, 1, 0, 5440, "Sec. VI-B (CMK_ConvertBlob)",
                                 ("CMK_ConvertMigration", "CMK_ConvMig", "TPM_CMK_ConvertBlob")),
}

for _command, (_ir, _or, _dec, _enc, _sign, _hash, _where, _aliases) in _TABLE.items():
    _terms = {"ohc": 1, "ohir": _ir, "ohor": _or, "rsa_dec": _dec, "rsa_enc": _enc,
              "rsa_sign": _sign, "sha1_byte": _hash}
    register(FAMILY, _command, {k: v for k, v in _terms.items() if v},
             source=f"{_PAPER}, {_where}", aliases=_aliases)
