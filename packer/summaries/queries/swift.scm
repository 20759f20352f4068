; Swift: what a file declares, for packer/summaries/treesitter.py.

(class_declaration name: (_) @name) @definition.class
(protocol_declaration name: (_) @name) @definition.interface
(function_declaration name: (_) @name) @definition.function
(protocol_function_declaration name: (_) @name) @definition.method
(init_declaration "init" @name) @definition.method
(property_declaration name: (pattern) @name) @definition.field
(typealias_declaration name: (_) @name) @definition.type
(enum_entry name: (_) @name) @definition.field

(import_declaration (identifier) @import)
