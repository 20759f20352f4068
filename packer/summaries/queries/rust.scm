; Rust: what a file declares, for packer/summaries/treesitter.py.

(struct_item name: (_) @name) @definition.struct
(union_item name: (_) @name) @definition.struct
(enum_item name: (_) @name) @definition.enum
(trait_item name: (_) @name) @definition.trait
(impl_item type: (_) @name) @definition.impl
(mod_item name: (_) @name body: (_)) @definition.module
(type_item name: (_) @name) @definition.type
(associated_type name: (_) @name) @definition.type

(function_item name: (_) @name) @definition.function
(function_signature_item name: (_) @name) @definition.function
(macro_definition name: (_) @name) @definition.function

(field_declaration name: (_) @name) @definition.field
(enum_variant name: (_) @name) @definition.field
(const_item name: (_) @name) @definition.constant
(static_item name: (_) @name) @definition.constant

(use_declaration (visibility_modifier)) @reexport
(use_declaration argument: (_) @import)
(extern_crate_declaration name: (_) @import)
