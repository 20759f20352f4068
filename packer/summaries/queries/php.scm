; PHP: what a file declares, for packer/summaries/treesitter.py.

(class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(trait_declaration name: (_) @name) @definition.trait
(enum_declaration name: (_) @name) @definition.enum
(function_definition name: (_) @name) @definition.function
(method_declaration name: (_) @name) @definition.method
(property_declaration (property_element (variable_name) @name)) @definition.field
(const_declaration (const_element (name) @name)) @definition.constant
(enum_case name: (_) @name) @definition.field

(namespace_use_clause (_) @import)
