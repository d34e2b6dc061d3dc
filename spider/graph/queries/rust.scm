; Rust definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

; --- types
(struct_item name: (type_identifier) @name.definition.struct) @definition.struct
(enum_item name: (type_identifier) @name.definition.enum) @definition.enum
(union_item name: (type_identifier) @name.definition.union) @definition.union
(trait_item name: (type_identifier) @name.definition.trait) @definition.trait

; --- functions (trait method signatures without a body are not definitions)
(function_item name: (identifier) @name.definition.function body: (block)) @definition.function

; --- scopes: impl blocks attach their functions to the implemented type; inline modules
(impl_item type: [(type_identifier) @name.scope
                  (generic_type type: (type_identifier) @name.scope)
                  (scoped_type_identifier name: (type_identifier) @name.scope)
                  (generic_type type: (scoped_type_identifier name: (type_identifier) @name.scope))]) @scope
(mod_item name: (identifier) @name.scope body: (declaration_list)) @scope

; --- implemented traits and supertraits
(impl_item trait: [(type_identifier) @name.reference.inherits
                   (generic_type type: (type_identifier) @name.reference.inherits)
                   (scoped_type_identifier path: (_) @receiver.reference.inherits
                                           name: (type_identifier) @name.reference.inherits)]) @reference.inherits
(trait_item bounds: (trait_bounds (type_identifier) @name.reference.inherits)) @reference.inherits

; --- calls (a path like util::go or Self::new is split into receiver and name)
(call_expression function: (identifier) @name.reference.call) @reference.call
(call_expression function: (scoped_identifier) @name.reference.call) @reference.call
(call_expression
  function: (field_expression value: (_) @receiver.reference.call
                              field: (field_identifier) @name.reference.call)) @reference.call
(call_expression
  function: (generic_function function: [(identifier) (scoped_identifier)] @name.reference.call)) @reference.call
(call_expression
  function: (generic_function
    function: (field_expression value: (_) @receiver.reference.call
                                field: (field_identifier) @name.reference.call))) @reference.call

; --- imports
(use_declaration argument: [(identifier) (scoped_identifier)] @module.reference.import) @reference.import
(use_declaration argument: (use_as_clause path: (_) @module.reference.import
                                          alias: (identifier) @alias.reference.import)) @reference.import
(use_declaration argument: (use_wildcard (_) @module.reference.import) @name.reference.import) @reference.import
(scoped_use_list path: (_) @module.reference.import
                 list: (use_list [(identifier) (self)] @name.reference.import)) @reference.import
(scoped_use_list path: (_) @module.reference.import
                 list: (use_list (scoped_identifier) @name.reference.import)) @reference.import
(scoped_use_list path: (_) @module.reference.import
                 list: (use_list (use_as_clause path: (_) @name.reference.import
                                                alias: (identifier) @alias.reference.import))) @reference.import
(mod_item name: (identifier) @path.reference.import !body) @reference.import
