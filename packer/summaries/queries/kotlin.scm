; Kotlin: what a file declares, for packer/summaries/treesitter.py.

(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.class
(companion_object "companion" @name) @definition.class
(function_declaration (simple_identifier) @name) @definition.function
(secondary_constructor "constructor" @name) @definition.method
(property_declaration (variable_declaration (simple_identifier) @name)) @definition.field
(type_alias (type_identifier) @name) @definition.type
(enum_entry (simple_identifier) @name) @definition.field

(import_header (identifier) @import)
