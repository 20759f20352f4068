; Go: what a file declares, for packer/summaries/treesitter.py.

(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method

(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type

; Struct fields (an embedded type is named by its type) and interface methods.
(field_declaration name: (field_identifier) @name) @definition.field
(field_declaration !name type: (_) @name) @definition.field
(method_elem name: (field_identifier) @name) @definition.method
(type_elem) @name @definition.field

(const_spec name: (identifier) @name) @definition.constant
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))

(import_spec path: (interpreted_string_literal) @import)
